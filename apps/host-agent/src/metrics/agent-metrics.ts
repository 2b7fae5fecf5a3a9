import { Counter, collectDefaultMetrics, Histogram, Registry } from "prom-client";

// The host agent's own signals (docs/adr/0043): what only the host sees, i.e. its node-local and
// remote cache traffic, verification failures, multipart retries and image preparation. Labels are
// fixed words from this code; nothing a job controls (names, keys, paths) becomes a label.

/** This agent's registry; its /metrics serialises it. */
export const agentRegistry = new Registry();
collectDefaultMetrics({ register: agentRegistry, prefix: "kiln_agent_" });

const SECONDS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];
const registers = [agentRegistry];

const cacheRestores = new Counter({
  name: "kiln_agent_cache_restores_total",
  help: "Build cache restores by result (hit, miss) and tier (local, remote, none).",
  labelNames: ["result", "tier"] as const,
  registers,
});
const cacheBytes = new Counter({
  name: "kiln_agent_cache_bytes_total",
  help: "Build cache bytes restored (unpacked) and saved (archive), by direction.",
  labelNames: ["direction"] as const,
  registers,
});
const cacheSeconds = new Histogram({
  name: "kiln_agent_cache_transfer_seconds",
  help: "Build cache restore and save time, by direction.",
  labelNames: ["direction"] as const,
  buckets: SECONDS,
  registers,
});
const cacheSaves = new Counter({
  name: "kiln_agent_cache_saves_total",
  help: "Build cache saves by result (saved, already_bound, conflict, refused, skipped, failed).",
  labelNames: ["result"] as const,
  registers,
});
const integrityFailures = new Counter({
  name: "kiln_agent_cache_integrity_failures_total",
  help: "Cache copies rejected while being verified and extracted (digest, archive rules, placement), by tier.",
  labelNames: ["tier"] as const,
  registers,
});
const localEvictions = new Counter({
  name: "kiln_agent_cache_local_evictions_total",
  help: "Archives the node-local cache tier removed to stay inside its budget.",
  registers,
});
const multipartRetries = new Counter({
  name: "kiln_agent_multipart_retries_total",
  help: "Artifact multipart part uploads retried after a failure.",
  registers,
});
const imagePreparation = new Histogram({
  name: "kiln_agent_image_preparation_seconds",
  help: "Image pull, verification and unpack per attempt, by result (ready, failed).",
  labelNames: ["result"] as const,
  buckets: SECONDS,
  registers,
});

type Restore = { result: "hit"; tier: "local" | "remote"; bytes: number; ms: number } | { result: "miss"; ms: number };
type Save = { result: string; bytes: number; ms: number };

/** Records one finished cache restore (an interrupted one records nothing). */
export function recordCacheRestore(r: Restore): void {
  cacheRestores.inc({ result: r.result, tier: r.result === "hit" ? r.tier : "none" });
  if (r.result === "hit") cacheBytes.inc({ direction: "restore" }, r.bytes);
  cacheSeconds.observe({ direction: "restore" }, r.ms / 1000);
}

/** Records one finished cache save. */
export function recordCacheSave(r: Save): void {
  cacheSaves.inc({ result: r.result });
  if (r.result === "saved") cacheBytes.inc({ direction: "save" }, r.bytes);
  cacheSeconds.observe({ direction: "save" }, r.ms / 1000);
}

export const countCacheIntegrityFailure = (tier: "local" | "remote"): void => integrityFailures.inc({ tier });
export const countLocalEvictions = (n: number): void => localEvictions.inc(n);
export const countMultipartRetry = (): void => multipartRetries.inc();

/** Records one image preparation's duration in milliseconds. */
export function observeImagePreparation(result: "ready" | "failed", ms: number): void {
  imagePreparation.observe({ result }, ms / 1000);
}
