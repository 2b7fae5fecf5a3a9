// A TCP load balancer on loopback in front of the web processes, as production has one in front of
// its replicas: each new connection goes to a random web that accepts it. Killing one web then cuts
// only the requests in flight on it; clients retry and land on another.
import net from "node:net";

export class Balancer {
  private server: net.Server | null = null;
  private readonly sockets = new Set<net.Socket>();
  port = 0;

  constructor(private readonly upstreams: () => number[]) {}

  async start(): Promise<string> {
    this.server = net.createServer((client) => {
      client.pause();
      this.sockets.add(client);
      client.on("close", () => this.sockets.delete(client));
      client.on("error", () => client.destroy());
      const ports = shuffle(this.upstreams());
      this.connect(client, ports);
    });
    await new Promise<void>((resolve) => this.server!.listen(0, "127.0.0.1", resolve));
    this.port = (this.server.address() as net.AddressInfo).port;
    return `http://127.0.0.1:${this.port}`;
  }

  private connect(client: net.Socket, ports: number[]): void {
    const port = ports.shift();
    if (port === undefined || client.destroyed) {
      client.destroy();
      return;
    }
    const upstream = net.connect(port, "127.0.0.1");
    upstream.once("error", () => {
      upstream.destroy();
      this.connect(client, ports); // refused: try the next web
    });
    upstream.once("connect", () => {
      this.sockets.add(upstream);
      upstream.removeAllListeners("error");
      upstream.on("error", () => client.destroy());
      upstream.on("close", () => {
        this.sockets.delete(upstream);
        client.destroy();
      });
      client.on("close", () => upstream.destroy());
      client.pipe(upstream);
      upstream.pipe(client);
      client.resume();
    });
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

function shuffle<T>(items: T[]): T[] {
  const a = [...items];
  for (let i = a.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [a[i], a[j]] = [a[j]!, a[i]!];
  }
  return a;
}
