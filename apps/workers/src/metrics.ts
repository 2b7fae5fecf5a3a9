import { createServer, type Server } from "node:http";
import { controlPlaneRegistry } from "@kiln/engine";
import type { Logger } from "@kiln/logger";
import { collectDefaultMetrics, Counter } from "prom-client";

// The workers' /metrics (docs/adr/0043): their own job results and the engine's in-process
// observations, on a port of their own (never the web app's). The fleet's PostgreSQL-derived gauges
// are exported by the web app only, so one scrape target answers for them.

collectDefaultMetrics({ register: controlPlaneRegistry, prefix: "kiln_workers_" });

const jobResults = new Counter({
  name: "kiln_worker_jobs_total",
  help: "pg-boss jobs this process handled, by queue (a fixed set, the job registry) and result.",
  labelNames: ["queue", "result"] as const,
  registers: [controlPlaneRegistry],
});

/** Counts one handled job (`ok` false: it failed and pg-boss retries it per its policy). */
export function countWorkerJob(queue: string, ok: boolean): void {
  jobResults.inc({ queue, result: ok ? "completed" : "failed" });
}

/**
 * Serves GET /metrics on host:port, or nothing when port is undefined (the default: several worker
 * processes on one host would otherwise fight over one port). Anything else is a 404.
 */
export async function serveWorkerMetrics(
  opts: { host: string; port: number | undefined },
  log: Logger,
): Promise<Server | null> {
  if (opts.port === undefined) return null;
  const server = createServer((req, res) => {
    if (req.method !== "GET" || req.url !== "/metrics") {
      res.writeHead(404).end();
      return;
    }
    controlPlaneRegistry.metrics().then(
      (body) => res.writeHead(200, { "content-type": controlPlaneRegistry.contentType }).end(body),
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
