// Synthetic tenants for the dispatch simulator: Zipf-skewed org sizes, 20x bursts, fan-out runs
// with a final job that waits for the rest, lognormal durations. Everything derives from the seed.
import type { Entitlement, Tier } from "@kiln/domain/dispatch";

export type TenantClass = "small" | "medium" | "large";

export interface WorkloadParams {
  orgs: number;
  jobs: number;
  seed: number;
  /** Length of the arrival window (ms). */
  horizonMs: number;
  /** Offered load: capacity is sized so that total work / (capacity * horizon) equals this. */
  targetLoad: number;
  zipfExponent: number;
  burstFraction: number;
  burstFactor: number;
  burstWindowMs: number;
  medianDurationMs: number;
  durationSigma: number;
  /** Smallest entitlement any org gets (1: every org owns a slot; 0: small orgs only borrow). */
  minSlots: number;
}

export const DEFAULT_PARAMS: WorkloadParams = {
  orgs: 600,
  jobs: 100_000,
  seed: 1,
  horizonMs: 6 * 3_600_000,
  targetLoad: 0.9,
  zipfExponent: 1.1,
  burstFraction: 0.1,
  burstFactor: 20,
  burstWindowMs: 10 * 60_000,
  medianDurationMs: 120_000,
  durationSigma: 0.8,
  minSlots: 1,
};

export interface SimOrg {
  orgId: string;
  rank: number;
  cls: TenantClass;
  entitlement: Entitlement;
  cap: number;
  jobs: number;
  burst: { start: number; end: number } | null;
}

export interface SimJob {
  index: number;
  jobId: string;
  org: number;
  run: number;
  tier: Tier;
  durationMs: number;
  /** The run's final job: queued at arrival, dispatchable when the run's other jobs finished. */
  isFinal: boolean;
}

export interface SimRun {
  runId: string;
  org: number;
  arrivalMs: number;
  tier: Tier;
  jobs: number[];
  finalJob: number | null;
}

export interface Workload {
  params: WorkloadParams;
  capacity: number;
  orgs: SimOrg[];
  runs: SimRun[];
  jobs: SimJob[];
  meanDurationMs: number;
}

/** mulberry32: tiny, fast, good enough for simulation; the seed makes every figure reproducible. */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

function normal(rand: () => number): number {
  const u = Math.max(rand(), 1e-12);
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * rand());
}

function classOf(rank: number, orgs: number): TenantClass {
  if (rank <= Math.max(1, Math.round(orgs / 60))) return "large";
  if (rank <= Math.max(2, Math.round(orgs / 6))) return "medium";
  return "small";
}

const RUN_SHAPE: Record<TenantClass, { mean: number; max: number; weight: number }> = {
  small: { mean: 3, max: 10, weight: 1 },
  medium: { mean: 8, max: 60, weight: 2 },
  large: { mean: 25, max: 900, weight: 4 },
};

function runSize(rand: () => number, cls: TenantClass): number {
  const { mean, max } = RUN_SHAPE[cls];
  // Pareto(alpha = 1.5) scaled to the class mean: most runs are small, a few are monorepo matrices.
  const alpha = 1.5;
  const xm = (mean * (alpha - 1)) / alpha;
  const x = xm / Math.pow(Math.max(rand(), 1e-9), 1 / alpha);
  return Math.max(1, Math.min(max, Math.round(x)));
}

function drawTier(rand: () => number): Tier {
  const u = rand();
  return u < 0.8 ? "interactive" : u < 0.92 ? "scheduled" : "background";
}

export function generateWorkload(params: WorkloadParams): Workload {
  const rand = mulberry32(params.seed);
  const zipf = Array.from({ length: params.orgs }, (_, i) => Math.pow(i + 1, -params.zipfExponent));
  const zipfSum = zipf.reduce((a, b) => a + b, 0);
  const counts = zipf.map((w) => Math.max(1, Math.floor((params.jobs * w) / zipfSum)));
  counts[0] = (counts[0] ?? 0) + params.jobs - counts.reduce((a, b) => a + b, 0);

  const jobs: SimJob[] = [];
  const runs: SimRun[] = [];
  const orgs: SimOrg[] = counts.map((n, i) => {
    const rank = i + 1;
    const cls = classOf(rank, params.orgs);
    // The three largest always burst (the monorepo pushing a 900-job pipeline); others at random.
    const bursts = rank <= 3 || rand() < params.burstFraction;
    const start = rand() * (params.horizonMs - params.burstWindowMs);
    return {
      orgId: `org${String(rank).padStart(3, "0")}`,
      rank,
      cls,
      entitlement: { orgId: `org${String(rank).padStart(3, "0")}`, slots: 0, weight: RUN_SHAPE[cls].weight },
      cap: 0,
      jobs: n,
      burst: bursts ? { start, end: start + params.burstWindowMs } : null,
    };
  });

  orgs.forEach((org, o) => {
    const w = params.burstWindowMs;
    const burstShare = org.burst ? (params.burstFactor * w) / (params.horizonMs - w + params.burstFactor * w) : 0;
    let left = org.jobs;
    while (left > 0) {
      const size = Math.min(left, runSize(rand, org.cls));
      left -= size;
      const inBurst = org.burst !== null && rand() < burstShare;
      const arrivalMs = Math.floor(inBurst && org.burst ? org.burst.start + rand() * w : rand() * params.horizonMs);
      const run: SimRun = {
        runId: `${org.orgId}-run${runs.length}`,
        org: o,
        arrivalMs,
        tier: drawTier(rand),
        jobs: [],
        finalJob: null,
      };
      for (let k = 0; k < size; k++) {
        const durationMs = Math.round(
          Math.min(3_600_000, Math.max(5_000, params.medianDurationMs * Math.exp(params.durationSigma * normal(rand)))),
        );
        const isFinal = size >= 3 && k === size - 1;
        const job: SimJob = {
          index: jobs.length,
          jobId: `j${jobs.length}`,
          org: o,
          run: runs.length,
          tier: run.tier,
          durationMs,
          isFinal,
        };
        jobs.push(job);
        run.jobs.push(job.index);
        if (isFinal) run.finalJob = job.index;
      }
      runs.push(run);
    }
  });
  runs.sort((a, b) => a.arrivalMs - b.arrivalMs || (a.runId < b.runId ? -1 : 1));

  const totalWork = jobs.reduce((a, j) => a + j.durationMs, 0);
  const capacity = Math.ceil(totalWork / (params.targetLoad * params.horizonMs));
  assignEntitlements(orgs, jobs, params, capacity);
  return { params, capacity, orgs, runs, jobs, meanDurationMs: totalWork / jobs.length };
}

/**
 * Entitlement ~ a fraction of the org's mean concurrent demand, at least minSlots, scaled so the
 * sum stays within 95% of the pool (entitlements are guarantees, so they must fit). Hard cap:
 * four times the entitlement, at least 20 slots, never more than the pool.
 */
function assignEntitlements(orgs: SimOrg[], jobs: SimJob[], params: WorkloadParams, capacity: number): void {
  const work = new Array<number>(orgs.length).fill(0);
  for (const j of jobs) work[j.org] = (work[j.org] ?? 0) + j.durationMs;
  const meanConcurrency = work.map((w) => w / params.horizonMs);
  const slotsFor = (f: number) => meanConcurrency.map((m) => Math.max(params.minSlots, Math.floor(f * m)));
  let f = 2;
  while (f > 0.05 && slotsFor(f).reduce((a, b) => a + b, 0) > 0.95 * capacity) f -= 0.05;
  const slots = slotsFor(f);
  orgs.forEach((org, i) => {
    org.entitlement.slots = slots[i] ?? 0;
    org.cap = Math.min(capacity, Math.max(20, 4 * org.entitlement.slots));
  });
}
