import type { Db } from "@kiln/db";
import { OUTCOMES } from "@kiln/domain";
import { Counter, Gauge, type Registry } from "prom-client";
import { readFleetSnapshot, type FleetSnapshot } from "./fleet-snapshot.ts";

// State-derived metrics, read from PostgreSQL at scrape time (PostgreSQL is the authority: no
// in-memory tally can be wrong about a queue it did not see). Each series is the same on every
// replica that exports it, so dashboards and alerts aggregate them with max(), never sum()
// (docs/adr/0043). Outcome and retry counters are counts of rows that are never deleted, so they
// only grow and rate()/increase() work on them across restarts of any process.

/** Snapshots are shared by every collector of one scrape: one round of queries, not one each. */
const SNAPSHOT_TTL_MS = 1_000;

/** Registers the fleet collectors on `registry`, reading through `db` when scraped. */
export function registerFleetMetrics(registry: Registry, db: Db): void {
  let cached: { at: number; snap: Promise<FleetSnapshot> } | null = null;
  const snapshot = (): Promise<FleetSnapshot> => {
    if (!cached || Date.now() - cached.at > SNAPSHOT_TTL_MS) {
      const snap = readFleetSnapshot(db);
      // A failed read is not cached: the next scrape tries again (and this one reports the error).
      snap.catch(() => (cached = null));
      cached = { at: Date.now(), snap };
    }
    return cached.snap;
  };
  const registers = [registry];

  outcomeCounter(
    registers,
    snapshot,
    "kiln_job_outcomes_total",
    "Jobs that reached an outcome, by outcome (the six of the domain): the infra-failure ratio's inputs.",
    (s) => s.jobOutcomes,
  );
  outcomeCounter(
    registers,
    snapshot,
    "kiln_attempt_outcomes_total",
    "Attempts that ended, by outcome (a retried platform failure counts here, not in its job's outcome).",
    (s) => s.attemptOutcomes,
  );
  rowCounter(
    registers,
    snapshot,
    "kiln_platform_retries_total",
    "Automatic retries after platform failures (the retry rate's numerator).",
    (s) => s.platformRetries,
  );
  rowCounter(
    registers,
    snapshot,
    "kiln_cache_evictions_total",
    "Build cache entries evicted (idle, over quota, superseded), from the entries' rows.",
    (s) => s.cacheEvictions,
  );
  perPoolGauge(
    registers,
    snapshot,
    "kiln_oldest_eligible_job_age_seconds",
    "Age of the oldest READY job eligible to run now (not throttled by its org's cap, not in retry backoff), by pool.",
    (s) => s.oldestEligible,
  );
  perPoolGauge(
    registers,
    snapshot,
    "kiln_ready_jobs",
    "READY jobs, by pool (queue depth; read with the oldest eligible age).",
    (s) => s.readyJobs,
  );
  perPoolGauge(
    registers,
    snapshot,
    "kiln_pool_reservations",
    "Slots reserved in the org/pool concurrency counters, by pool.",
    (s) => s.reservations,
  );
  perPoolGauge(
    registers,
    snapshot,
    "kiln_pool_occupancy",
    "Attempts actually running (live attempt rows), by pool.",
    (s) => s.occupancy,
  );
  perPoolGauge(
    registers,
    snapshot,
    "kiln_queue_wait_p95_seconds",
    "p95 queue wait of interactive attempts claimed in the last 5 minutes, by pool (0 without samples).",
    (s) => s.queueWaitP95,
  );
  scalarGauge(
    registers,
    snapshot,
    "kiln_reconciler_lag_seconds",
    "How long the oldest expired lease has waited to be fenced by the reconciler (0: none waiting).",
    (s) => s.reconcilerLag,
  );
  scalarGauge(
    registers,
    snapshot,
    "kiln_log_archive_lag_seconds",
    "Age of the oldest journal log chunk not yet archived to object storage (0: none).",
    (s) => s.archiveLag,
  );
  scalarGauge(
    registers,
    snapshot,
    "kiln_tlog_checkpoint_age_seconds",
    "How long the oldest transparency-log entry has waited for a signed checkpoint covering it (0: all covered).",
    (s) => s.tlogUncovered,
  );
  scalarGauge(
    registers,
    snapshot,
    "kiln_shred_leaks",
    "Shredded objects (per path) whose latest deletion sample still read plaintext.",
    (s) => s.shredLeaks,
  );
  scalarGauge(
    registers,
    snapshot,
    "kiln_unbound_generation_age_seconds",
    "Age of the oldest artifact generation that can never be bound and still holds storage (GC backlog).",
    (s) => s.unboundGenerationAge,
  );
  scalarGauge(
    registers,
    snapshot,
    "kiln_cache_entries",
    "Build cache entries currently stored.",
    (s) => s.cacheEntries,
  );
  scalarGauge(registers, snapshot, "kiln_cache_bytes", "Bytes of stored build cache entries.", (s) => s.cacheBytes);
}

type Snap = () => Promise<FleetSnapshot>;

// Counters whose value is a count of rows that are never deleted: set from the snapshot each scrape.
function outcomeCounter(
  registers: Registry[],
  snapshot: Snap,
  name: string,
  help: string,
  pick: (s: FleetSnapshot) => Record<string, number>,
): void {
  new Counter({
    name,
    help,
    labelNames: ["outcome"] as const,
    registers,
    async collect() {
      const counts = pick(await snapshot());
      this.reset();
      for (const o of OUTCOMES) this.labels({ outcome: o }).inc(counts[o] ?? 0);
    },
  });
}

function rowCounter(
  registers: Registry[],
  snapshot: Snap,
  name: string,
  help: string,
  pick: (s: FleetSnapshot) => number,
): void {
  new Counter({
    name,
    help,
    registers,
    async collect() {
      const n = pick(await snapshot());
      this.reset();
      this.inc(n);
    },
  });
}

function perPoolGauge(
  registers: Registry[],
  snapshot: Snap,
  name: string,
  help: string,
  pick: (s: FleetSnapshot) => Map<string, number>,
): void {
  new Gauge({
    name,
    help,
    labelNames: ["pool"] as const,
    registers,
    async collect() {
      const s = await snapshot();
      this.reset();
      // Every configured pool reports, at 0 when empty, so an alert's absence means "fine", not "no data".
      for (const pool of s.pools) this.set({ pool }, pick(s).get(pool) ?? 0);
    },
  });
}

function scalarGauge(
  registers: Registry[],
  snapshot: Snap,
  name: string,
  help: string,
  pick: (s: FleetSnapshot) => number,
): void {
  new Gauge({
    name,
    help,
    registers,
    async collect() {
      this.set(pick(await snapshot()));
    },
  });
}
