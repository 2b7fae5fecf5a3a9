// Exactly six outcomes (seed 002, "What does a red check actually mean"). Only platform failures
// are retried automatically; everything else is final for the attempt.
export const OUTCOMES = [
  "success",
  "user_failure",
  "platform_failure",
  "cancelled",
  "timed_out",
  "blocked_by_policy",
] as const;
export type Outcome = (typeof OUTCOMES)[number];

export function isOutcome(v: unknown): v is Outcome {
  return typeof v === "string" && (OUTCOMES as readonly string[]).includes(v);
}

/** The class an engineer reads from a red badge: whose problem is it. */
export type OutcomeClass = "ok" | "your_code" | "platform" | "cancelled" | "timed_out" | "policy";

export function classifyOutcome(o: Outcome): OutcomeClass {
  switch (o) {
    case "success":
      return "ok";
    case "user_failure":
      return "your_code";
    case "platform_failure":
      return "platform";
    case "cancelled":
      return "cancelled";
    case "timed_out":
      return "timed_out";
    case "blocked_by_policy":
      return "policy";
  }
}

export function isAutoRetryable(o: Outcome): boolean {
  return o === "platform_failure";
}

/**
 * The run's outcome from its jobs' outcomes: the first job (by index) that did not succeed decides,
 * so the badge names the root cause rather than the downstream jobs that never ran.
 */
export function deriveRunOutcome(jobs: readonly { jobIndex: number; outcome: Outcome; cause: string | null }[]): {
  outcome: Outcome;
  cause: string | null;
  jobIndex: number | null;
} {
  const failed = [...jobs]
    .filter((j) => j.outcome !== "success" && !isSecondaryCause(j.cause))
    .sort((a, b) => a.jobIndex - b.jobIndex);
  const first = failed[0];
  if (!first) return { outcome: "success", cause: null, jobIndex: null };
  return { outcome: first.outcome, cause: first.cause, jobIndex: first.jobIndex };
}

/** Cause recorded on jobs that never ran because a job they need did not succeed. */
export const UPSTREAM_FAILED_CAUSE = "needs.not_satisfied";

/** Cause recorded on a matrix sibling cancelled by fail_fast (issue 20). */
export const FAIL_FAST_CAUSE = "matrix.fail_fast";

/** Casualties of another job's failure: never the root cause a run's badge or summary names. */
export function isSecondaryCause(cause: string | null): boolean {
  return cause === UPSTREAM_FAILED_CAUSE || cause === FAIL_FAST_CAUSE;
}
