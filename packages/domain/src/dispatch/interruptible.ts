import type { Tier } from "./types.ts";

// Interruptible capacity (issue 22, seed 002 "Which jobs may run on capacity the cloud can take
// back", docs/adr/0035): only the background tier runs there, because a reclaim adds a cold start
// plus the lost work to the job, and nobody is waiting on background work. A reclaimed job goes back
// to on-demand capacity with its own cause, so the re-dispatch is attributable and does not read as
// an infrastructure failure.

/** Platform-failure cause of an attempt stopped because the cloud took its host back. */
export const RECLAIMED_CAUSE = "host.reclaimed";

/** Seed 002's target: at least this share of eligible background job-minutes on interruptible capacity. */
export const INTERRUPTIBLE_TARGET_SHARE = 0.55;

export interface InterruptibleJobFacts {
  tier: Tier;
  /** A reclaim already hit this job: it runs on on-demand capacity from now on. */
  excluded: boolean;
}

/** Why an interruptible host may not take a job, or null when it may. */
export function interruptibleRefusal(job: InterruptibleJobFacts): "not_background" | "reclaimed_before" | null {
  if (job.tier !== "background") return "not_background";
  if (job.excluded) return "reclaimed_before";
  return null;
}

export interface ShareInput {
  /** Job-minutes of background-tier attempts in the pool's queue, wherever they ran. */
  eligibleMinutes: number;
  /** The part of those that ran on interruptible hosts. */
  interruptibleMinutes: number;
}

export interface ShareReport {
  eligibleMinutes: number;
  interruptibleMinutes: number;
  /** interruptible / eligible; null when there was no eligible work (no share to speak of). */
  share: number | null;
  target: number;
  /** Null with no eligible work: a target cannot be missed on nothing. */
  meetsTarget: boolean | null;
}

export function interruptibleShare(input: ShareInput): ShareReport {
  const eligible = Math.max(0, input.eligibleMinutes);
  // Clamped: clock skew between claim and finish times cannot make the part exceed the whole.
  const part = Math.min(eligible, Math.max(0, input.interruptibleMinutes));
  const share = eligible > 0 ? part / eligible : null;
  return {
    eligibleMinutes: eligible,
    interruptibleMinutes: part,
    share,
    target: INTERRUPTIBLE_TARGET_SHARE,
    meetsTarget: share === null ? null : share >= INTERRUPTIBLE_TARGET_SHARE,
  };
}
