import { DomainError } from "../shared/errors.ts";
import {
  isAutoRetryable,
  JOB_TRANSITIONS,
  legalSources,
  type AttemptStatus,
  type JobStatus,
  type Outcome,
  type RunStatus,
} from "../runs/index.ts";
import { shouldRetryPlatformFailure } from "./retry-policy.ts";

/** What the completion transaction loaded, under the run lock then the job lock. */
export interface CompletionState {
  run: { status: RunStatus; cancelVersion: number };
  job: { status: JobStatus; currentEpoch: number; platformRetries: number };
  attempt: { epoch: number; status: AttemptStatus; leaseLive: boolean; preemptRequested?: boolean };
  reportedEpoch: number;
  reportedOutcome: Outcome;
  /** Artifact names the job must publish, and those SEALED for this very attempt. */
  requiredArtifacts: readonly string[];
  sealedArtifacts: readonly string[];
  retryBudget: number;
}

export type CompletionDecision =
  | { kind: "succeed" }
  | { kind: "fail"; outcome: Exclude<Outcome, "success">; cause?: string; message?: string }
  | { kind: "retry"; cause?: string; message?: string }
  /** Cancellation committed first: record the stop, publish nothing. */
  | { kind: "cancelled_first" }
  /** Background work stopped to return lent capacity: back to the queue, no retry budget used. */
  | { kind: "requeue" };

/**
 * The fencing rule (seed 000 sections 8-9): only the current epoch with a live lease may publish,
 * a cancel that committed first wins, and success needs every required artifact sealed for this
 * attempt. Stale reports are refused outright: nothing about them is written.
 */
export function decideCompletion(s: CompletionState): CompletionDecision {
  if (
    s.attempt.status !== "running" ||
    s.reportedEpoch !== s.job.currentEpoch ||
    s.attempt.epoch !== s.job.currentEpoch
  ) {
    throw new DomainError("ATTEMPT.STALE_EPOCH", `epoch ${s.reportedEpoch} is not the job's current attempt`, {
      current_epoch: s.job.currentEpoch,
    });
  }
  if (!s.attempt.leaseLive) {
    throw new DomainError("ATTEMPT.LEASE_EXPIRED", "the attempt's lease expired; it has been or will be fenced");
  }
  if (s.run.status === "cancelling" || s.run.status === "completed") return { kind: "cancelled_first" };
  if (s.job.status !== "running") {
    throw new DomainError("JOB.ILLEGAL_TRANSITION", `job is ${s.job.status}, not running`);
  }
  // A preempted job that finished anyway keeps its result; otherwise it goes back to the queue.
  if (s.attempt.preemptRequested && s.reportedOutcome !== "success") return { kind: "requeue" };
  if (s.reportedOutcome === "success") {
    const sealed = new Set(s.sealedArtifacts);
    const missing = s.requiredArtifacts.filter((n) => !sealed.has(n));
    if (missing.length > 0) {
      return retryOrFail(
        s,
        "artifact.required_missing",
        `required artifact(s) not sealed for this attempt: ${missing.join(", ")}`,
      );
    }
    return { kind: "succeed" };
  }
  if (isAutoRetryable(s.reportedOutcome)) return retryOrFail(s);
  return { kind: "fail", outcome: s.reportedOutcome };
}

function retryOrFail(s: CompletionState, cause?: string, message?: string): CompletionDecision {
  if (shouldRetryPlatformFailure(s.job.platformRetries, s.retryBudget)) {
    return { kind: "retry", ...(cause ? { cause } : {}), ...(message ? { message } : {}) };
  }
  return { kind: "fail", outcome: "platform_failure", ...(cause ? { cause } : {}), ...(message ? { message } : {}) };
}

/** Heartbeats renew only the current, live attempt. */
export function decideHeartbeat(s: {
  job: { currentEpoch: number };
  attempt: { epoch: number; status: AttemptStatus; leaseLive: boolean };
  reportedEpoch: number;
}): void {
  if (
    s.attempt.status !== "running" ||
    s.reportedEpoch !== s.job.currentEpoch ||
    s.attempt.epoch !== s.job.currentEpoch
  ) {
    throw new DomainError("ATTEMPT.STALE_EPOCH", `epoch ${s.reportedEpoch} is not the job's current attempt`, {
      current_epoch: s.job.currentEpoch,
    });
  }
  if (!s.attempt.leaseLive) {
    throw new DomainError("ATTEMPT.LEASE_EXPIRED", "the attempt's lease expired; destroy the sandbox");
  }
}

/** What the reconciler does with an attempt whose lease ran out (the runner went silent). */
export function decideLeaseExpiry(s: {
  runStatus: RunStatus;
  platformRetries: number;
  retryBudget: number;
}): { kind: "cancelled" } | { kind: "retry" } | { kind: "fail" } {
  // Silence is never success: the attempt ends as a platform failure at best.
  if (s.runStatus === "cancelling" || s.runStatus === "completed") return { kind: "cancelled" };
  return shouldRetryPlatformFailure(s.platformRetries, s.retryBudget) ? { kind: "retry" } : { kind: "fail" };
}

const CLAIMABLE: readonly JobStatus[] = legalSources(JOB_TRANSITIONS, "claimed", "running");

/** Claims: one transaction checks all of these; any "no" leaves the job for someone else. */
export function decideClaim(s: {
  runStatus: RunStatus;
  jobStatus: JobStatus;
  jobGeneration: number;
  offeredGeneration: number | null;
  predecessorsSucceeded: boolean;
  notBefore: Date | null;
  now: Date;
  sessionRunning: number;
  sessionCapacity: number;
}):
  | { ok: true }
  | { ok: false; reason: "not_ready" | "stale_generation" | "run_inactive" | "backoff" | "no_capacity" } {
  if (s.runStatus !== "running") return { ok: false, reason: "run_inactive" };
  if (!CLAIMABLE.includes(s.jobStatus) || !s.predecessorsSucceeded) return { ok: false, reason: "not_ready" };
  if (s.offeredGeneration !== null && s.offeredGeneration !== s.jobGeneration)
    return { ok: false, reason: "stale_generation" };
  if (s.notBefore && s.notBefore.getTime() > s.now.getTime()) return { ok: false, reason: "backoff" };
  if (s.sessionRunning >= s.sessionCapacity) return { ok: false, reason: "no_capacity" };
  return { ok: true };
}
