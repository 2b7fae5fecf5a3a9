// The enum-like values of the environments tables (migration 0018_environments). The database's
// CHECK constraints list exactly these (packages/db/test/state-constraints.test.ts).

/** closed: a gate that cannot be evaluated denies (GATE.UNAVAILABLE); open: it is skipped, recorded. */
export const FAIL_MODES = ["closed", "open"] as const;
export type FailMode = (typeof FAIL_MODES)[number];

/** A rollback is a promotion too: it goes through the gates, as a rollback (issue 18). */
export const PROMOTION_KINDS = ["promote", "rollback"] as const;
export type PromotionKind = (typeof PROMOTION_KINDS)[number];

/**
 * pending: waiting for approvals or an override; denied (a gate refused) and rejected (an approver
 * refused) are final and moved nothing; promoted: the pointer moved. deploying, deployed and
 * deploy_failed are the deploy run's (started by the pointer move when the environment has one).
 */
export const PROMOTION_STATES = [
  "pending",
  "denied",
  "rejected",
  "promoted",
  "deploying",
  "deployed",
  "deploy_failed",
] as const;
export type PromotionState = (typeof PROMOTION_STATES)[number];

/** The states a promotion's pointer move has happened in. */
export const MOVED_PROMOTION_STATES: readonly PromotionState[] = ["promoted", "deploying", "deployed", "deploy_failed"];

/** The decision service's answer (seed 002: allow, deny, allow-with-override-required). */
export const VERDICTS = ["allow", "deny", "override_required"] as const;
export type Verdict = (typeof VERDICTS)[number];

export const APPROVAL_DECISIONS = ["approve", "reject"] as const;
export type ApprovalDecision = (typeof APPROVAL_DECISIONS)[number];

/** pending: waiting for the second approver the policy requires; applied: the promotion used it. */
export const OVERRIDE_STATES = ["pending", "applied"] as const;
export type OverrideState = (typeof OVERRIDE_STATES)[number];
