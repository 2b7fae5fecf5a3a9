import { IndexedHeap, type HeapItem } from "./indexed-heap.ts";
import { PoolScheduler } from "./pool-scheduler.ts";
import type { DispatchOptions, PoolState, QueueSlotEstimate, QueuedJob, WaitReason } from "./types.ts";

export interface PlanOptions extends DispatchOptions {
  /** Expected duration of one of the org's jobs (e.g. its recent median). */
  expectedDurationMs: (orgId: string) => number;
}

interface EndEvent extends HeapItem {
  at: number;
  jobId: string;
  runId: string | undefined;
}

function endBefore(a: EndEvent, b: EndEvent): boolean {
  return a.at !== b.at ? a.at < b.at : a.jobId < b.jobId;
}

/**
 * Queue position, estimated start and wait reason for every queued job, computed by replaying
 * the same decisions chooseNext makes: dispatch while it picks, then advance to the next
 * expected completion or backoff expiry, and repeat. Running jobs are expected to end at
 * startedAt + expectedDurationMs (never before now).
 *
 * Jobs waiting for predecessors: the DAG is not in PoolState, so a run's waiting jobs are
 * assumed to become ready when every other job of that run known here (queued or running with
 * a runId) has finished; a run with nothing known here is assumed unblocked now. Chains
 * therefore collapse to one level and those ETAs are lower bounds.
 */
export function planQueue(state: PoolState, opts: PlanOptions): Map<string, QueueSlotEstimate> {
  const sim = PoolScheduler.fromState(state, opts);
  const plan = new Map<string, QueueSlotEstimate>();
  const ends = new IndexedHeap<EndEvent>(endBefore);
  const endOf = new Map<string, EndEvent>();
  const durationOf = (orgId: string): number => Math.max(0, opts.expectedDurationMs(orgId));
  const addEnd = (jobId: string, runId: string | undefined, at: number): void => {
    const event: EndEvent = { at, jobId, runId, heapIndex: -1 };
    ends.push(event);
    endOf.set(jobId, event);
  };
  const runs = trackRuns(state.queued, state.running);
  for (const job of state.running)
    addEnd(job.jobId, job.runId, Math.max(state.now, job.startedAt + durationOf(job.orgId)));

  let t = state.now;
  let reasons: Map<string, WaitReason> | null = null;
  for (;;) {
    // One dispatch round at t, exactly as the dispatcher would call chooseNext repeatedly.
    for (let decision = sim.next(t); decision.pick; decision = sim.next(t)) {
      for (const victim of decision.preempt) {
        const event = endOf.get(victim.jobId);
        if (event) ends.remove(event);
        sim.preempt(victim.jobId);
      }
      const { jobId, orgId, runId } = decision.pick;
      sim.start(jobId, t);
      addEnd(jobId, runId, t + durationOf(orgId));
      if (!plan.has(jobId) && runs.estimated.has(jobId)) {
        plan.set(jobId, { position: plan.size + 1, etaMs: t, reason: reasons?.get(jobId) ?? "ready" });
      }
    }
    if (reasons === null) {
      reasons = new Map();
      for (const job of sim.queuedJobs()) reasons.set(job.jobId, sim.waitReason(job.jobId) ?? "no_capacity");
      if (releaseOrphanRuns(sim, runs) > 0) continue;
    }
    if (sim.queuedCount === 0) break;
    const nextEnd = ends.peek()?.at;
    const wake = sim.nextWakeAt();
    const candidates = [nextEnd, wake].filter((x): x is number => x !== undefined && x !== null);
    if (candidates.length === 0) break;
    t = Math.max(t, Math.min(...candidates));
    for (let top = ends.peek(); top && top.at <= t; top = ends.peek()) {
      ends.pop();
      endOf.delete(top.jobId);
      sim.finish(top.jobId);
      finishInRun(sim, runs, top.runId, top.jobId);
    }
  }
  appendUnreachable(plan, runs.estimated, reasons ?? new Map());
  return plan;
}

interface RunTracking {
  /** Jobs that get an estimate: those queued in the input. */
  estimated: Map<string, QueuedJob>;
  /** Per run: jobs known here and not yet finished, excluding its waiting jobs. */
  open: Map<string, Set<string>>;
  /** Per run: jobs waiting for predecessors, released when `open` empties. */
  waiting: Map<string, string[]>;
}

function trackRuns(queued: readonly QueuedJob[], running: PoolState["running"]): RunTracking {
  const t: RunTracking = { estimated: new Map(), open: new Map(), waiting: new Map() };
  const openOf = (runId: string): Set<string> => {
    let s = t.open.get(runId);
    if (!s) t.open.set(runId, (s = new Set()));
    return s;
  };
  for (const job of queued) {
    t.estimated.set(job.jobId, job);
    if (job.predecessorsDone) openOf(job.runId).add(job.jobId);
    else {
      const list = t.waiting.get(job.runId);
      if (list) list.push(job.jobId);
      else t.waiting.set(job.runId, [job.jobId]);
    }
  }
  for (const job of running) if (job.runId !== undefined) openOf(job.runId).add(job.jobId);
  for (const list of t.waiting.values()) list.sort();
  return t;
}

function finishInRun(sim: PoolScheduler, runs: RunTracking, runId: string | undefined, jobId: string): void {
  if (runId === undefined) return;
  const open = runs.open.get(runId);
  if (!open || !open.delete(jobId) || open.size > 0) return;
  releaseWaiting(sim, runs, runId);
}

function releaseOrphanRuns(sim: PoolScheduler, runs: RunTracking): number {
  let released = 0;
  for (const runId of [...runs.waiting.keys()].sort()) {
    if ((runs.open.get(runId)?.size ?? 0) === 0) released += releaseWaiting(sim, runs, runId);
  }
  return released;
}

function releaseWaiting(sim: PoolScheduler, runs: RunTracking, runId: string): number {
  const waiting = runs.waiting.get(runId) ?? [];
  runs.waiting.delete(runId);
  for (const jobId of waiting) sim.update(jobId, { predecessorsDone: true });
  return waiting.length;
}

/** Jobs nothing foreseeable lets start (zero capacity or cap): last, in arrival order. */
function appendUnreachable(
  plan: Map<string, QueueSlotEstimate>,
  estimated: Map<string, QueuedJob>,
  reasons: Map<string, WaitReason>,
): void {
  const rest = [...estimated.values()]
    .filter((job) => !plan.has(job.jobId))
    .sort((a, b) => a.enqueuedAt - b.enqueuedAt || (a.jobId < b.jobId ? -1 : a.jobId > b.jobId ? 1 : 0));
  for (const job of rest) {
    plan.set(job.jobId, {
      position: plan.size + 1,
      etaMs: Number.POSITIVE_INFINITY,
      reason: reasons.get(job.jobId) ?? "no_capacity",
    });
  }
}
