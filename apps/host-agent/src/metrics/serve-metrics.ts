import { createServer, type Server } from "node:http";
import type { Logger } from "@kiln/logger";
import { agentRegistry } from "./agent-metrics.ts";

/**
 * GET /metrics on host:port (docs/adr/0043); nothing when port is undefined, the default, since
 * several agents may share a machine. Loopback by default: the port is unauthenticated and the
 * agent is the trusted supervisor of hostile sandboxes, which must never reach it.
 */
export async function serveAgentMetrics(
  opts: { host: string; port: number | undefined },
  log: Logger,
): Promise<Server | null> {
  if (opts.port === undefined) return null;
  const server = createServer((req, res) => {
    if (req.method !== "GET" || req.url !== "/metrics") {
      res.writeHead(404).end();
      return;
    }
    agentRegistry.metrics().then(
      (body) => res.writeHead(200, { "content-type": agentRegistry.contentType }).end(body),
      (err: unknown) => {
        log.error("metrics collection failed", { err });
        res.writeHead(500).end();
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port, opts.host, resolve);
  });
  log.info("metrics listening", { host: opts.host, port: opts.port });
  return server;
}
