import type { Db } from "@kiln/db";
import { dispatch } from "@kiln/domain";
import { loadPoolState, type RunnerFilter } from "./pool-snapshot.ts";

// A short-lived, per-process ranking of one pool's queue, shared by every claim this process
// serves. Ranking the whole pool inside each claim made every claimer load the queue, the running
// set and the entitlements, then rank them, and all of them then raced for the same top job: claim
// cost grew with queue length and claimer count. Here one load serves many claims: each claim
// takes the view's next pick and the view counts it as started, so concurrent claimers get
// different jobs in fair order. The view stays advisory (seed 003 Q3): the claim transaction
// re-checks readiness, generation, backoff and the org's hard cap under locks, and a pick that
// fails there is simply skipped.

/** Queued jobs loaded per org: enough for a burst of claims before the view is reloaded. */
const PER_ORG = 64;

interface View {
  scheduler: dispatch.PoolScheduler;
  loadedAt: number;
  now: number;
}

interface PoolEntry {
  view: View | null;
  loading: Promise<View> | null;
  loadingSince: number;
  /** Views loaded before this instant are stale (see invalidateDispatchViews). */
  staleBefore: number;
}

const byDb = new WeakMap<Db, Map<string, PoolEntry>>();

export interface Pick {
  jobId: string;
  runId: string;
}

/**
 * Hands out the pool's next candidates, at most `max`, in the scheduler's order. A view older than
 * `maxAgeMs`, or one with nothing left to offer, is reloaded (single-flight per pool and process);
 * a view that is empty right after loading means the queue is empty.
 */
export async function takeCandidates(
  db: Db,
  pool: string,
  policy: dispatch.DispatchPolicy,
  maxAgeMs: number,
  max: number,
  /** Only jobs of trusted runs: the view of hosts that may not run untrusted work (ADR 0022). */
  trustedOnly = false,
  /** Only jobs this host's runner labels and sizes serve (issue 20); absent: no filter. */
  runner?: RunnerFilter,
  /** Interruptible hosts (issue 22): background jobs no reclaim hit, ranked in a view of their own. */
  backgroundOnly = false,
): Promise<Pick[]> {
  let pools = byDb.get(db);
  if (!pools) byDb.set(db, (pools = new Map()));
  // Hosts that may not take untrusted jobs rank their own view: picking such a job and refusing it
  // would mark it started in a view shared with the hosts that may.
  // Likewise per runner capability: hosts with the same labels and sizes share one view, so a job
  // only a GPU host may take is never marked started in the view the other hosts draw from.
  const key = [
    pool,
    trustedOnly ? "trusted" : "",
    runner ? `${runner.labels.join(",")}|${runner.sizes.join(",")}` : "",
    // Interruptible hosts rank background work only: a foreground pick refused there would be marked
    // started in the view the on-demand hosts draw from.
    backgroundOnly ? "interruptible" : "",
  ].join("\u0000");
  let entry = pools.get(key);
  if (!entry) pools.set(key, (entry = { view: null, loading: null, loadingSince: 0, staleBefore: 0 }));

  const v = entry.view;
  const fresh = v && v.loadedAt >= entry.staleBefore && performance.now() - v.loadedAt <= maxAgeMs ? v : null;
  if (fresh) {
    const picks = take(fresh, max);
    if (picks.length > 0) return picks;
  }
  return take(
    await reload(db, entry, pool, policy, { trustedOnly, backgroundOnly, ...(runner ? { runner } : {}) }),
    max,
  );
}

function reload(
  db: Db,
  entry: PoolEntry,
  pool: string,
  policy: dispatch.DispatchPolicy,
  filter: { trustedOnly: boolean; backgroundOnly: boolean; runner?: RunnerFilter },
): Promise<View> {
  // Joining a load already in flight is fine unless the view was invalidated after it started.
  if (entry.loading && entry.loadingSince >= entry.staleBefore) return entry.loading;
  const started = performance.now();
  const loading = (async () => {
    const { state, caps } = await loadPoolState(db, pool, { perOrg: PER_ORG, ...filter });
    // Claimers have free slots even when sessions' announced capacity lags: never rank as "full"
    // (preemption is the reconciler's business, not a claim's).
    const scheduler = dispatch.PoolScheduler.fromState(
      { ...state, capacity: Math.max(state.capacity, state.running.length + state.queued.length) },
      { policy, orgCaps: caps },
    );
    const view: View = { scheduler, loadedAt: started, now: state.now };
    if (!entry.view || entry.view.loadedAt <= started) entry.view = view;
    return view;
  })();
  entry.loading = loading;
  entry.loadingSince = started;
  const clear = () => {
    if (entry.loading === loading) entry.loading = null;
  };
  loading.then(clear, clear);
  return loading;
}

function take(view: View, max: number): Pick[] {
  const picks: Pick[] = [];
  const now = view.now + (performance.now() - view.loadedAt);
  while (picks.length < max) {
    const d = view.scheduler.next(now);
    if (!d.pick) break;
    view.scheduler.start(d.pick.jobId, now);
    picks.push({ jobId: d.pick.jobId, runId: d.pick.runId });
  }
  return picks;
}

/**
 * Marks this process's views stale: the next claim reloads. Called after this process finished an
 * attempt (a slot freed and successors may be READY), so the next pick sees the change at once;
 * other processes see it within their view's age.
 */
export function invalidateDispatchViews(db: Db): void {
  const pools = byDb.get(db);
  if (!pools) return;
  const now = performance.now();
  for (const entry of pools.values()) entry.staleBefore = now;
}
