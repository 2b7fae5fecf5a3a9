import { Counter, Histogram, Registry } from "prom-client";

// Metrics a control-plane process (web or workers) observes itself, in memory, as things happen:
// latencies only the request that saw them knows. Everything that is state (queue ages, lags, leaks,
// outcomes) is read from PostgreSQL at scrape time instead (fleet-metrics.ts), because PostgreSQL is
// the authority and an in-memory tally forgets across restarts and differs between replicas.
// Labels are bounded by configuration or by code, never by run, job or attempt id (docs/adr/0043).

// Seconds buckets from 5 ms to 10 min: claims and trigger writes sit at the low end, image
// preparation and commands at the high end.
const SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];

/** The phases an agent reports at completion (seed 000 section 15), one histogram each. */
const PHASES = {
  image: "kiln_image_preparation_seconds",
  dispatch: "kiln_dispatch_latency_seconds",
  execution: "kiln_command_duration_seconds",
  finalize: "kiln_publication_latency_seconds",
} as const;
const phaseHelp: Record<keyof typeof PHASES, string> = {
  image: "Image preparation per attempt (pull, verify, unpack), as reported at completion.",
  dispatch: "From claim to the first step starting in the sandbox, as reported at completion.",
  execution: "Command (steps) duration per attempt, as reported at completion.",
  finalize: "Publication latency per attempt (artifact and cache upload, sealing), as reported at completion.",
};

function createProcessMetrics() {
  const registry = new Registry();
  const registers = [registry];
  return {
    registry,
    staleRejections: new Counter({
      name: "kiln_stale_result_rejections_total",
      help: "Writes from an attempt refused because it was fenced (stale epoch, expired lease, revoked host).",
      labelNames: ["code"] as const,
      registers,
    }),
    triggerPersistence: new Histogram({
      name: "kiln_trigger_persistence_seconds",
      help: "From a trigger's arrival to its run committed in PostgreSQL (webhook intake).",
      labelNames: ["trigger"] as const,
      buckets: SECONDS,
      registers,
    }),
    claimLatency: new Histogram({
      name: "kiln_claim_transaction_seconds",
      help: "One claim transaction's duration as the web process saw it, by result.",
      labelNames: ["result"] as const,
      buckets: SECONDS,
      registers,
    }),
    phases: Object.fromEntries(
      (Object.keys(PHASES) as (keyof typeof PHASES)[]).map((k) => [
        k,
        new Histogram({ name: PHASES[k], help: phaseHelp[k], buckets: SECONDS, registers }),
      ]),
    ) as Record<keyof typeof PHASES, Histogram>,
  };
}

// Next.js bundles each route with its own copy of this module, so the metrics live on globalThis:
// one set per process, whichever route observes or serialises them (as server/context.ts does).
const g = globalThis as unknown as { __kilnProcessMetrics?: ReturnType<typeof createProcessMetrics> };
const m = (g.__kilnProcessMetrics ??= createProcessMetrics());

/** This process's registry; /metrics serialises it. One per process. */
export const controlPlaneRegistry: Registry = m.registry;

const FENCING_CODES = new Set(["ATTEMPT.STALE_EPOCH", "ATTEMPT.LEASE_EXPIRED", "ATTEMPT.HOST_REVOKED"]);

/** Counts a refused write if `code` is a fencing refusal; other codes are ignored. */
export function countFencingRefusal(code: string): void {
  if (FENCING_CODES.has(code)) m.staleRejections.inc({ code });
}

/** Records how long a trigger took to persist its run (`trigger` is a fixed word: webhook today). */
export function observeTriggerPersistence(trigger: "webhook", startedAtMs: number): void {
  m.triggerPersistence.observe({ trigger }, Math.max(0, Date.now() - startedAtMs) / 1000);
}

/** Records one claim transaction (result: claimed, none, declined). */
export function observeClaim(result: "claimed" | "none" | "declined", startedAtMs: number): void {
  m.claimLatency.observe({ result }, Math.max(0, Date.now() - startedAtMs) / 1000);
}

/** Records the phase durations (milliseconds) an agent reported with an accepted completion. */
export function observeAttemptPhases(phases: Partial<Record<keyof typeof PHASES, number | undefined>>): void {
  for (const k of Object.keys(PHASES) as (keyof typeof PHASES)[]) {
    const ms = phases[k];
    if (typeof ms === "number" && ms >= 0) m.phases[k].observe(ms / 1000);
  }
}
