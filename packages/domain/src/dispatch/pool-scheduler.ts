import { IndexedHeap } from "./indexed-heap.ts";
import {
  createOrgState,
  fairBefore,
  band,
  pickVictimJob,
  victimOrgBefore,
  type OrgState,
  type QueuedEntry,
  type RunningEntry,
} from "./org-state.ts";
import {
  DEFAULT_ENTITLEMENT,
  DEFAULT_NEARLY_DONE_BUMP_MS,
  NEARLY_DONE_PROGRESS,
  TIERS,
  tierRank,
  type DispatchDecision,
  type DispatchOptions,
  type DispatchPolicy,
  type Entitlement,
  type PoolState,
  type QueuedJob,
  type RunningJob,
  type WaitReason,
} from "./types.ts";

export interface PoolSchedulerConfig extends DispatchOptions {
  capacity: number;
  entitlements?: readonly Entitlement[];
  defaultEntitlement?: Pick<Entitlement, "slots" | "weight">;
}

function backoffBefore(a: QueuedEntry, b: QueuedEntry): boolean {
  const na = a.job.notBefore ?? 0;
  const nb = b.job.notBefore ?? 0;
  if (na !== nb) return na < nb;
  return a.job.jobId < b.job.jobId;
}

/**
 * Incremental per-pool dispatch state. `chooseNext` and `planQueue` build one from a PoolState
 * snapshot; a long-lived dispatcher (and the simulator) keeps one and feeds it events, so a
 * decision costs O(orgs with dispatchable work) instead of O(queue). The view is advisory: the
 * claim transaction re-checks the hard cap, capacity and backoff in PostgreSQL.
 */
export class PoolScheduler {
  readonly policy: DispatchPolicy;
  readonly capacity: number;
  private readonly bumpMs: number;
  private readonly laneCount: number;
  private readonly orgCaps: ReadonlyMap<string, number>;
  private readonly defaultRow: Pick<Entitlement, "slots" | "weight">;
  private readonly orgs = new Map<string, OrgState>();
  private readonly queued = new Map<string, QueuedEntry>();
  private readonly running = new Map<string, RunningEntry>();
  /** Orgs with at least one dispatchable job, per lane. Scanned, never trusted for order. */
  private readonly active: Set<OrgState>[] = [];
  private readonly backoff = new IndexedHeap<QueuedEntry>(backoffBefore);
  private readonly withBackground = new Set<OrgState>();
  private runningTotal = 0;

  constructor(config: PoolSchedulerConfig) {
    if (!(config.capacity >= 0) || !Number.isFinite(config.capacity))
      throw new RangeError("capacity must be a finite number >= 0");
    this.policy = config.policy;
    this.capacity = config.capacity;
    this.bumpMs = config.policy === "fair" ? (config.nearlyDoneBumpMs ?? DEFAULT_NEARLY_DONE_BUMP_MS) : 0;
    this.laneCount = config.policy === "fair" ? TIERS.length : 1;
    this.orgCaps = config.orgCaps ?? new Map();
    this.defaultRow = config.defaultEntitlement ?? DEFAULT_ENTITLEMENT;
    for (let i = 0; i < this.laneCount; i++) this.active.push(new Set());
    for (const row of config.entitlements ?? []) {
      if (this.orgs.has(row.orgId)) throw new RangeError(`duplicate entitlement for org ${row.orgId}`);
      this.orgs.set(row.orgId, createOrgState(row.orgId, row, this.capOf(row.orgId), true, this.laneCount));
    }
  }

  static fromState(state: PoolState, opts: DispatchOptions): PoolScheduler {
    const scheduler = new PoolScheduler({
      ...opts,
      capacity: state.capacity,
      entitlements: state.entitlements,
      ...(state.defaultEntitlement ? { defaultEntitlement: state.defaultEntitlement } : {}),
    });
    for (const job of state.running) scheduler.addRunning(job);
    for (const job of state.queued) scheduler.enqueue(job);
    return scheduler;
  }

  get runningCount(): number {
    return this.runningTotal;
  }

  get queuedCount(): number {
    return this.queued.size;
  }

  runningOf(orgId: string): number {
    return this.orgs.get(orgId)?.running ?? 0;
  }

  isQueued(jobId: string): boolean {
    return this.queued.has(jobId);
  }

  queuedJobs(): IterableIterator<QueuedJob> {
    return mapIterator(this.queued.values(), (e) => e.job);
  }

  runningJobs(): IterableIterator<RunningJob> {
    return mapIterator(this.running.values(), (e) => e.job);
  }

  /** The view as a PoolState (for planQueue from a live scheduler). Orgs' caps stay in DispatchOptions. */
  snapshot(now: number): PoolState {
    const entitlements: Entitlement[] = [];
    for (const org of this.orgs.values()) {
      if (org.explicit) entitlements.push({ orgId: org.orgId, slots: org.slots, weight: org.weight });
    }
    return {
      capacity: this.capacity,
      entitlements,
      running: [...this.runningJobs()],
      queued: [...this.queuedJobs()],
      now,
      defaultEntitlement: this.defaultRow,
    };
  }

  /** Earliest backoff expiry still pending, for event loops that must wake up then. */
  nextWakeAt(): number | null {
    return this.backoff.peek()?.job.notBefore ?? null;
  }

  enqueue(job: QueuedJob): void {
    if (this.queued.has(job.jobId) || this.running.has(job.jobId))
      throw new RangeError(`job ${job.jobId} is already known`);
    const org = this.orgFor(job.orgId);
    const bump = job.runProgress >= NEARLY_DONE_PROGRESS ? this.bumpMs : 0;
    const lane = this.policy === "fair" ? tierRank(job.tier) : 0;
    const entry: QueuedEntry = { job, org, key: job.enqueuedAt - bump, lane, where: "eligible", heapIndex: -1 };
    this.queued.set(job.jobId, entry);
    this.place(entry);
  }

  /** Drops a queued job (cancelled, or claimed by another dispatcher). */
  remove(jobId: string): QueuedJob | null {
    const entry = this.queued.get(jobId);
    if (!entry) return null;
    this.detach(entry);
    this.queued.delete(jobId);
    return entry.job;
  }

  /** Replaces a queued job's fields (progress crossed the bump threshold, predecessors done, backoff). */
  update(jobId: string, patch: Partial<Pick<QueuedJob, "runProgress" | "predecessorsDone" | "notBefore">>): boolean {
    const job = this.remove(jobId);
    if (!job) return false;
    this.enqueue({ ...job, ...patch });
    return true;
  }

  /** Records a job the claim transaction started. */
  start(jobId: string, startedAt: number): RunningJob {
    const entry = this.queued.get(jobId);
    if (!entry) throw new RangeError(`job ${jobId} is not queued`);
    this.remove(jobId);
    const { orgId, tier, runId } = entry.job;
    const running: RunningJob = { jobId, orgId, tier, startedAt, runId };
    this.track(running, entry.job);
    return running;
  }

  /** Records a job already running (loading a snapshot). */
  addRunning(job: RunningJob): void {
    if (this.queued.has(job.jobId) || this.running.has(job.jobId))
      throw new RangeError(`job ${job.jobId} is already known`);
    this.track(job, null);
  }

  /** A running job ended (any outcome). */
  finish(jobId: string): RunningJob | null {
    const entry = this.running.get(jobId);
    if (!entry) return null;
    this.running.delete(jobId);
    entry.org.running -= 1;
    this.runningTotal -= 1;
    if (entry.org.background.delete(jobId) && entry.org.background.size === 0) this.withBackground.delete(entry.org);
    return entry.job;
  }

  /**
   * Stops a running job chosen for preemption and puts it back in the queue as it was (original
   * enqueuedAt, so it is first in its org's line). The caller records PREEMPTED_CAUSE.
   */
  preempt(jobId: string): QueuedJob | null {
    const entry = this.running.get(jobId);
    if (!entry) return null;
    this.finish(jobId);
    const { orgId, tier, startedAt, runId } = entry.job;
    const requeued: QueuedJob = entry.queued
      ? { ...entry.queued, notBefore: null }
      : {
          jobId,
          orgId,
          tier,
          runId: runId ?? jobId,
          enqueuedAt: startedAt,
          runProgress: 0,
          predecessorsDone: true,
          notBefore: null,
        };
    this.enqueue(requeued);
    return requeued;
  }

  /** Why a queued job is not running, from this view (planQueue adds "ready"). */
  waitReason(jobId: string): WaitReason | null {
    const entry = this.queued.get(jobId);
    if (!entry) return null;
    if (entry.where === "backoff") return "backoff";
    if (entry.where === "waiting") return "waiting_for_predecessor";
    return entry.org.running >= entry.org.cap ? "org_cap" : "no_capacity";
  }

  /** The next dispatch decision at `now`. Only releases due backoff; picks are applied with start(). */
  next(now: number): DispatchDecision {
    this.releaseDue(now);
    const hasDispatchable = this.active.some((orgs) => orgs.size > 0);
    if (!hasDispatchable) return { pick: null, preempt: [], reason: "nothing_dispatchable" };
    if (this.runningTotal >= this.capacity) {
      return this.policy === "fair" ? this.preemptForOwner() : { pick: null, preempt: [], reason: "no_capacity" };
    }
    return this.policy === "fair" ? this.pickFair() : this.pickFifo();
  }

  private pickFair(): DispatchDecision {
    for (let lane = 0; lane < this.laneCount; lane++) {
      const best = this.bestOrg(lane, false);
      const head = best?.lanes[lane]?.peek();
      if (best && head) return { pick: head.job, preempt: [], reason: band(best) === 0 ? "entitled" : "borrowed" };
    }
    return { pick: null, preempt: [], reason: "org_cap" };
  }

  private pickFifo(): DispatchDecision {
    let best: QueuedEntry | null = null;
    for (const org of this.active[0] ?? []) {
      if (org.running >= org.cap) continue;
      const head = org.lanes[0]?.peek();
      if (head && (best === null || head.key < best.key || (head.key === best.key && head.job.jobId < best.job.jobId)))
        best = head;
    }
    return best ? { pick: best.job, preempt: [], reason: "fifo" } : { pick: null, preempt: [], reason: "org_cap" };
  }

  /**
   * Pool full: an owner under its entitlement with interactive or scheduled work takes a slot
   * from another org's background job beyond that org's entitlement. Each preemption lowers the
   * total borrowed beyond entitlements by one, so repeated decisions cannot ping-pong.
   */
  private preemptForOwner(): DispatchDecision {
    const reclaimLanes = Math.min(this.laneCount, tierRank("background"));
    for (let lane = 0; lane < reclaimLanes; lane++) {
      const owner = this.bestOrg(lane, true);
      const head = owner?.lanes[lane]?.peek();
      if (!owner || !head) continue;
      let victimOrg: OrgState | null = null;
      for (const org of this.withBackground) {
        if (org.running > org.slots && (victimOrg === null || victimOrgBefore(org, victimOrg))) victimOrg = org;
      }
      const victim = victimOrg ? pickVictimJob(victimOrg) : null;
      if (!victim) break;
      return { pick: head.job, preempt: [victim.job], reason: "preempting_background" };
    }
    return { pick: null, preempt: [], reason: "no_capacity" };
  }

  private bestOrg(lane: number, ownersOnly: boolean): OrgState | null {
    let best: OrgState | null = null;
    for (const org of this.active[lane] ?? []) {
      if (org.running >= org.cap) continue;
      if (ownersOnly && band(org) !== 0) continue;
      if (best === null || fairBefore(org, best, lane)) best = org;
    }
    return best;
  }

  private releaseDue(now: number): void {
    for (let top = this.backoff.peek(); top && (top.job.notBefore ?? 0) <= now; top = this.backoff.peek()) {
      this.backoff.pop();
      top.where = top.job.predecessorsDone ? "eligible" : "waiting";
      if (top.where === "eligible") this.pushEligible(top);
    }
  }

  private place(entry: QueuedEntry): void {
    const nb = entry.job.notBefore;
    if (nb !== null && nb !== undefined) {
      entry.where = "backoff";
      this.backoff.push(entry);
    } else if (!entry.job.predecessorsDone) {
      entry.where = "waiting";
    } else {
      entry.where = "eligible";
      this.pushEligible(entry);
    }
  }

  private pushEligible(entry: QueuedEntry): void {
    const lane = entry.org.lanes[entry.lane];
    if (!lane) throw new RangeError(`lane ${entry.lane} out of range`);
    lane.push(entry);
    this.active[entry.lane]?.add(entry.org);
  }

  private detach(entry: QueuedEntry): void {
    if (entry.where === "backoff") {
      this.backoff.remove(entry);
    } else if (entry.where === "eligible") {
      const lane = entry.org.lanes[entry.lane];
      lane?.remove(entry);
      if (lane?.size === 0) this.active[entry.lane]?.delete(entry.org);
    }
  }

  private track(job: RunningJob, queued: QueuedJob | null): void {
    const org = this.orgFor(job.orgId);
    const entry: RunningEntry = { job, org, queued };
    this.running.set(job.jobId, entry);
    org.running += 1;
    this.runningTotal += 1;
    if (job.tier === "background") {
      org.background.set(job.jobId, entry);
      this.withBackground.add(org);
    }
  }

  private orgFor(orgId: string): OrgState {
    let org = this.orgs.get(orgId);
    if (!org) {
      org = createOrgState(orgId, this.defaultRow, this.capOf(orgId), false, this.laneCount);
      this.orgs.set(orgId, org);
    }
    return org;
  }

  private capOf(orgId: string): number {
    return this.orgCaps.get(orgId) ?? Number.POSITIVE_INFINITY;
  }
}

function* mapIterator<A, B>(it: Iterable<A>, f: (a: A) => B): IterableIterator<B> {
  for (const a of it) yield f(a);
}
