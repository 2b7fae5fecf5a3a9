// What the retention worker may evict, decided once here so `kiln retention plan` and the worker
// cannot disagree: both load candidates with their blockers and ask `decideEviction`.
import type { RetentionClass } from "./retention-classes.ts";

/** The kinds the worker evicts (a plan entry's `kind`). */
export const EVICTION_KINDS = ["artifact", "log", "run_metadata"] as const;
export type EvictionKind = (typeof EVICTION_KINDS)[number];

/**
 * Why an expired item is kept anyway. Seed 002: nothing referenced by a live environment pointer
 * (or its history: rollback targets) is evicted; issue 21 adds holds and runs that still consume or
 * may retry the data; run metadata stays while its run still has live artifacts or logs.
 */
export const EVICTION_BLOCKERS = [
  "environment_pointer",
  "pointer_history",
  "hold",
  "consuming_run",
  "retryable_run",
  "live_data",
] as const;
export type EvictionBlocker = (typeof EVICTION_BLOCKERS)[number];

export interface RetentionCandidate {
  kind: EvictionKind;
  id: string;
  orgId: string;
  class: RetentionClass;
  expiresAt: Date;
  blockers: readonly EvictionBlocker[];
}

export type EvictionDecision =
  | { action: "evict"; reason: "expired" }
  | { action: "keep"; reason: "not_expired" }
  | { action: "keep"; reason: EvictionBlocker };

export function decideEviction(c: RetentionCandidate, at: Date): EvictionDecision {
  if (c.expiresAt.getTime() > at.getTime()) return { action: "keep", reason: "not_expired" };
  // The first blocker in the declared order names the reason, so plans read the same every time.
  const blocker = EVICTION_BLOCKERS.find((b) => c.blockers.includes(b));
  if (blocker) return { action: "keep", reason: blocker };
  return { action: "evict", reason: "expired" };
}

export interface RetentionPlanEntry {
  kind: EvictionKind;
  id: string;
  org_id: string;
  class: RetentionClass;
  expires_at: string;
  reason: string;
}

export interface RetentionPlan {
  at: string;
  evict: RetentionPlanEntry[];
  /** Expired but kept, with the blocker that keeps it. */
  kept: RetentionPlanEntry[];
}

/** Sorted by kind, expiry, id: deterministic, so two plans of one state compare equal. */
export function planRetention(candidates: readonly RetentionCandidate[], at: Date): RetentionPlan {
  const evict: RetentionPlanEntry[] = [];
  const kept: RetentionPlanEntry[] = [];
  for (const c of candidates) {
    const d = decideEviction(c, at);
    if (d.reason === "not_expired") continue;
    const entry: RetentionPlanEntry = {
      kind: c.kind,
      id: c.id,
      org_id: c.orgId,
      class: c.class,
      expires_at: c.expiresAt.toISOString(),
      reason: d.reason,
    };
    (d.action === "evict" ? evict : kept).push(entry);
  }
  const order = (a: RetentionPlanEntry, b: RetentionPlanEntry) =>
    EVICTION_KINDS.indexOf(a.kind) - EVICTION_KINDS.indexOf(b.kind) ||
    a.expires_at.localeCompare(b.expires_at) ||
    a.id.localeCompare(b.id);
  return { at: at.toISOString(), evict: evict.sort(order), kept: kept.sort(order) };
}
