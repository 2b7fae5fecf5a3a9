// A TCP proxy in front of the web server that can lose responses: the request reaches the server
// and is fully processed, but the caller's connection is cut as soon as the answer starts coming
// back. From the caller's side that is indistinguishable from a server that crashed after
// committing and before answering, which is the window a redelivery must be safe against.
import net from "node:net";

export class LossyProxy {
  /** When true, every response is swallowed and the client's connection reset. */
  dropResponses = false;
  private server: net.Server | null = null;
  private readonly sockets = new Set<net.Socket>();
  port = 0;

  constructor(private readonly upstreamPort: number) {}

  async start(): Promise<string> {
    this.server = net.createServer((client) => this.pipe(client));
    await new Promise<void>((resolve) => this.server!.listen(0, "127.0.0.1", resolve));
    this.port = (this.server.address() as net.AddressInfo).port;
    return `http://127.0.0.1:${this.port}`;
  }

  private pipe(client: net.Socket): void {
    const upstream = net.connect(this.upstreamPort, "127.0.0.1");
    this.sockets.add(client).add(upstream);
    client.on("data", (d) => upstream.write(d));
    upstream.on("data", (d) => {
      if (this.dropResponses) {
        client.resetAndDestroy();
        upstream.destroy();
      } else {
        client.write(d);
      }
    });
    const close = () => {
      client.destroy();
      upstream.destroy();
      this.sockets.delete(client);
      this.sockets.delete(upstream);
    };
    client.on("close", close).on("error", close);
    upstream.on("close", close).on("error", close);
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}
