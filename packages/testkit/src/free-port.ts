// Free loopback ports for the embedded services and the platform's web servers.
import net from "node:net";

/** Asks the kernel for an unused port. Racy by nature (someone may grab it before we bind),
 * which is why the start functions retry with a new port when they picked it themselves. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

/** Retries `fn` on a fresh port when the caller did not ask for a specific one (see freePort). */
export async function withPort<T>(port: number | undefined, fn: (port: number) => Promise<T>): Promise<T> {
  if (port !== undefined) return fn(port);
  let lastErr: unknown;
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      return await fn(await freePort());
    } catch (err) {
      lastErr = err;
      if (!/address already in use/i.test(String(err))) throw err;
    }
  }
  throw lastErr;
}

/** Fails if something already listens on `port`. Without this, startRedis could get its PING
 * answered by a *different* Redis already on that port and hand out the wrong URL. */
export function assertPortFree(port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once("error", (err) => reject(new Error(`port ${port} on 127.0.0.1: ${err.message}`)));
    srv.listen(port, "127.0.0.1", () => srv.close(() => resolve()));
  });
}
