import { IndexedHeap, type HeapItem } from "./indexed-heap.ts";
import type { QueuedJob, RunningJob } from "./types.ts";

/** Where a queued job sits: dispatchable, blocked on its run's DAG, or in retry backoff. */
type QueuedWhere = "eligible" | "waiting" | "backoff";

export interface QueuedEntry extends HeapItem {
  job: QueuedJob;
  org: OrgState;
  /** Effective enqueue time: enqueuedAt minus the nearly-done bump. Lower goes first. */
  key: number;
  lane: number;
  where: QueuedWhere;
}

export interface RunningEntry {
  job: RunningJob;
  org: OrgState;
  /** The queued form, kept when this scheduler started the job, so a preempted job re-queues as it was. */
  queued: QueuedJob | null;
}

export interface OrgState {
  orgId: string;
  slots: number;
  weight: number;
  /** Hard cap (quota); Infinity when the org has none in this pool. */
  cap: number;
  /** Whether `slots`/`weight` came from an entitlement row rather than the default. */
  explicit: boolean;
  running: number;
  /** Running background jobs: the only preemption victims. */
  background: Map<string, RunningEntry>;
  /** Dispatchable jobs per lane (tier under the fair policy, a single lane under fifo). */
  lanes: IndexedHeap<QueuedEntry>[];
}

/** Within an org: FIFO by effective enqueue time, then by run, then by job id (total order). */
function queuedBefore(a: QueuedEntry, b: QueuedEntry): boolean {
  if (a.key !== b.key) return a.key < b.key;
  if (a.job.runId !== b.job.runId) return a.job.runId < b.job.runId;
  return a.job.jobId < b.job.jobId;
}

export function createOrgState(
  orgId: string,
  row: { slots: number; weight: number },
  cap: number,
  explicit: boolean,
  laneCount: number,
): OrgState {
  if (!(row.slots >= 0) || !Number.isFinite(row.slots))
    throw new RangeError(`org ${orgId}: slots must be a finite number >= 0`);
  if (!(row.weight > 0) || !Number.isFinite(row.weight))
    throw new RangeError(`org ${orgId}: weight must be a finite number > 0`);
  if (!(cap >= 0)) throw new RangeError(`org ${orgId}: hard cap must be >= 0`);
  const lanes: IndexedHeap<QueuedEntry>[] = [];
  for (let i = 0; i < laneCount; i++) lanes.push(new IndexedHeap<QueuedEntry>(queuedBefore));
  return { orgId, slots: row.slots, weight: row.weight, cap, explicit, running: 0, background: new Map(), lanes };
}

/** Band 0: the owner is under its entitlement and reclaims first. Band 1: it would be borrowing. */
export function band(org: OrgState): 0 | 1 {
  return org.running < org.slots ? 0 : 1;
}

/**
 * Weighted share after one more slot (a virtual finish tag in slot space). Owners are compared
 * by what they hold per unit weight; borrowers by what they borrow per unit weight, so idle
 * capacity is split between borrowers by weight regardless of how much each one owns.
 */
function shareAfterNext(org: OrgState): number {
  const held = band(org) === 0 ? org.running + 1 : org.running + 1 - org.slots;
  return held / org.weight;
}

/** Fair order between two orgs that both have a dispatchable job in `lane`. */
export function fairBefore(a: OrgState, b: OrgState, lane: number): boolean {
  const bandA = band(a);
  const bandB = band(b);
  if (bandA !== bandB) return bandA < bandB;
  const shareA = shareAfterNext(a);
  const shareB = shareAfterNext(b);
  if (shareA !== shareB) return shareA < shareB;
  const headA = a.lanes[lane]?.peek();
  const headB = b.lanes[lane]?.peek();
  if (headA && headB && headA.key !== headB.key) return headA.key < headB.key;
  return a.orgId < b.orgId;
}

/** Preemption victims come from the org borrowing most per unit weight; ties by org id. */
export function victimOrgBefore(a: OrgState, b: OrgState): boolean {
  const overA = (a.running - a.slots) / a.weight;
  const overB = (b.running - b.slots) / b.weight;
  if (overA !== overB) return overA > overB;
  return a.orgId < b.orgId;
}

/** Within the victim org, the most recently started background job: the least work thrown away. */
export function pickVictimJob(org: OrgState): RunningEntry | null {
  let best: RunningEntry | null = null;
  for (const entry of org.background.values()) {
    if (
      best === null ||
      entry.job.startedAt > best.job.startedAt ||
      (entry.job.startedAt === best.job.startedAt && entry.job.jobId > best.job.jobId)
    ) {
      best = entry;
    }
  }
  return best;
}
