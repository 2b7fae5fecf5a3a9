import type { PoolState, QueuedJob, RunningJob, Tier } from "./types.ts";

export function queued(jobId: string, orgId: string, enqueuedAt: number, extra: Partial<QueuedJob> = {}): QueuedJob {
  return {
    jobId,
    orgId,
    runId: `${orgId}-run`,
    tier: "interactive",
    enqueuedAt,
    runProgress: 0,
    predecessorsDone: true,
    ...extra,
  };
}

export function running(jobId: string, orgId: string, startedAt = 0, tier: Tier = "interactive"): RunningJob {
  return { jobId, orgId, tier, startedAt };
}

/** `count` queued jobs for one org, ids `${orgId}-${i}`, enqueued 1 ms apart from `from`. */
export function manyQueued(orgId: string, count: number, from: number, extra: Partial<QueuedJob> = {}): QueuedJob[] {
  return Array.from({ length: count }, (_, i) =>
    queued(`${orgId}-${String(i).padStart(4, "0")}`, orgId, from + i, extra),
  );
}

export function manyRunning(orgId: string, count: number, tier: Tier = "interactive", startedAt = 0): RunningJob[] {
  return Array.from({ length: count }, (_, i) =>
    running(`${orgId}-${tier.charAt(0)}${String(i).padStart(4, "0")}`, orgId, startedAt + i, tier),
  );
}

export function pool(partial: Partial<PoolState> & Pick<PoolState, "capacity">): PoolState {
  return { entitlements: [], running: [], queued: [], now: 0, ...partial };
}

/** Moves `pick` from queued to running and drops preempted jobs (re-queued as the caller wants). */
export function applyPick(state: PoolState, pickId: string, preempt: readonly string[] = []): PoolState {
  const pick = state.queued.find((j) => j.jobId === pickId);
  if (!pick) throw new Error(`no queued job ${pickId}`);
  return {
    ...state,
    queued: state.queued.filter((j) => j.jobId !== pickId),
    running: [
      ...state.running.filter((r) => !preempt.includes(r.jobId)),
      { jobId: pick.jobId, orgId: pick.orgId, tier: pick.tier, startedAt: state.now, runId: pick.runId },
    ],
  };
}

/** How PoolScheduler.preempt re-queues a job it did not start itself (loaded from a snapshot). */
export function requeuedFromRunning(r: RunningJob): QueuedJob {
  return {
    jobId: r.jobId,
    orgId: r.orgId,
    tier: r.tier,
    runId: r.runId ?? r.jobId,
    enqueuedAt: r.startedAt,
    runProgress: 0,
    predecessorsDone: true,
    notBefore: null,
  };
}
