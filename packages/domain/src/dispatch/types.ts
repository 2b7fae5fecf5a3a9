import { assertNever } from "../shared/errors.ts";

// Fair dispatch (issue 9; seed 002 "whose job runs next", seed 003 "Scheduling: fairness is the
// product" and Q3). The dispatcher's view is advisory: it only chooses candidates. The claim
// transaction in PostgreSQL is the authority for the org's hard cap and the pool's capacity.

/** Priority tiers, evaluated before fairness: interactive outranks background of any org. */
export const TIERS = ["interactive", "scheduled", "background"] as const;
export type Tier = (typeof TIERS)[number];

export type DispatchPolicy = "fair" | "fifo";

/** An org's row for one pool: guaranteed concurrent slots and a fair-share weight (plan tier). */
export interface Entitlement {
  orgId: string;
  slots: number;
  weight: number;
}

/**
 * Orgs without an entitlement row own nothing and run only on borrowed (idle) capacity, at the
 * weight of the lowest plan. A zero default keeps the sum of entitlements something platform
 * engineers curate explicitly instead of something that grows with every new org.
 */
export const DEFAULT_ENTITLEMENT: Readonly<Pick<Entitlement, "slots" | "weight">> = { slots: 0, weight: 1 };

export interface QueuedJob {
  jobId: string;
  orgId: string;
  runId: string;
  tier: Tier;
  /** When the job became queued (ms). FIFO within an org is by this, then runId, then jobId. */
  enqueuedAt: number;
  /** Fraction (0..1) of the run's jobs already finished; >= NEARLY_DONE_PROGRESS earns a bump. */
  runProgress: number;
  /** Retry backoff: not dispatchable before this instant (ms). */
  notBefore?: number | null;
  predecessorsDone: boolean;
}

export interface RunningJob {
  jobId: string;
  orgId: string;
  tier: Tier;
  startedAt: number;
  /** Optional; lets planQueue estimate when a run's waiting jobs are unblocked. */
  runId?: string;
}

export interface PoolState {
  /** Total slots of the pool. */
  capacity: number;
  entitlements: readonly Entitlement[];
  running: readonly RunningJob[];
  queued: readonly QueuedJob[];
  now: number;
  /** Applied to orgs without an entitlement row; DEFAULT_ENTITLEMENT when absent. */
  defaultEntitlement?: Pick<Entitlement, "slots" | "weight">;
}

export interface DispatchOptions {
  policy: DispatchPolicy;
  /** The org's hard concurrency cap (its quota) in this pool; orgs absent here are uncapped. */
  orgCaps?: ReadonlyMap<string, number>;
  /** How far (ms) a job of a nearly finished run jumps ahead within its org. Fair policy only. */
  nearlyDoneBumpMs?: number;
}

/** Why a pick was made, or why nothing was picked. */
export type DecisionReason =
  | "entitled" // the org is under its entitlement (this is how lent capacity returns)
  | "borrowed" // the org is at or over its entitlement and runs on idle capacity
  | "fifo" // oldest dispatchable job, fifo policy
  | "preempting_background" // an owner reclaims a slot held by another org's background work
  | "no_capacity" // pool full, nothing preemptible
  | "org_cap" // every dispatchable job belongs to an org at its hard cap
  | "nothing_dispatchable"; // queue empty, or every job waits for predecessors or backoff

export interface DispatchDecision {
  pick: QueuedJob | null;
  /** Background jobs to stop before starting `pick`; re-queue them with PREEMPTED_CAUSE. */
  preempt: RunningJob[];
  reason: DecisionReason;
}

export type WaitReason = "org_cap" | "no_capacity" | "waiting_for_predecessor" | "backoff" | "ready";

export interface QueueSlotEstimate {
  /** 1-based order in which the pool is expected to dispatch the job. */
  position: number;
  /** Expected start (absolute ms); Infinity when nothing foreseeable lets it start. */
  etaMs: number;
  /** Why it is not running now; "ready" means the next dispatch decisions pick it. */
  reason: WaitReason;
}

export const NEARLY_DONE_PROGRESS = 0.8;
export const DEFAULT_NEARLY_DONE_BUMP_MS = 30_000;

/**
 * Platform cause recorded on a background job stopped to return capacity to its owner. It is
 * attributable and expected, so it must not count towards the infrastructure-failure ratio.
 */
export const PREEMPTED_CAUSE = "capacity.preempted";

export function tierRank(tier: Tier): number {
  switch (tier) {
    case "interactive":
      return 0;
    case "scheduled":
      return 1;
    case "background":
      return 2;
    default:
      return assertNever(tier, "tier");
  }
}
