// What an attempt reports, and why it stopped early when it did.
import { dispatch, SANDBOX_LIMIT_CAUSES, type Outcome, type SandboxLimit } from "@kiln/domain";
import type { StepResult } from "../sandboxes/index.ts";

export interface Verdict {
  outcome: Outcome;
  cause: string | null;
  message: string | null;
  exitCode: number | null;
}

/**
 * Why an attempt was interrupted. cancel/timeout end the step gracefully (SIGTERM, grace, SIGKILL);
 * the others kill at once. Higher rank wins when several arrive.
 */
export type StopReason = "cancel" | "timeout" | "shutdown" | "reclaimed" | "lease_lost" | "fenced";

// A reclaim outranks a plain shutdown: the host is going away for a reason the control plane treats
// apart (re-dispatch to on-demand capacity, not a retry), so it must not be reported as agent.shutdown.
const RANK: Record<StopReason, number> = {
  cancel: 1,
  timeout: 1,
  shutdown: 2,
  reclaimed: 2.5,
  lease_lost: 3,
  fenced: 4,
};

export function outranks(next: StopReason, current: StopReason | null): boolean {
  return current === null || RANK[next] > RANK[current];
}

export function killsAtOnce(reason: StopReason): boolean {
  return reason === "shutdown" || reason === "reclaimed" || reason === "lease_lost" || reason === "fenced";
}

/** True for reasons that still matter after the steps finished (the lease is not ours any more). */
export function overridesFinishedWork(reason: StopReason): boolean {
  return reason === "lease_lost" || reason === "fenced";
}

export const SUCCESS: Verdict = { outcome: "success", cause: null, message: null, exitCode: null };

export function platformFailure(cause: string, message: string): Verdict {
  return { outcome: "platform_failure", cause, message, exitCode: null };
}

/** The verdict for an interrupted attempt; null means "report nothing" (fenced: no longer ours). */
export function verdictForStop(reason: StopReason, ctx: { timeoutMinutes: number }): Verdict | null {
  switch (reason) {
    case "cancel":
      return {
        outcome: "cancelled",
        cause: "run.cancelled",
        message: "cancelled at the control plane's request",
        exitCode: null,
      };
    case "timeout":
      return {
        outcome: "timed_out",
        cause: "job.timeout",
        message: `job exceeded its timeout of ${ctx.timeoutMinutes} minute(s)`,
        exitCode: null,
      };
    case "shutdown":
      return platformFailure("agent.shutdown", "the host agent shut down while the job was running");
    case "reclaimed":
      return platformFailure(
        dispatch.RECLAIMED_CAUSE,
        "the cloud reclaimed this interruptible host while the job was running; re-dispatched to on-demand capacity",
      );
    case "lease_lost":
      return platformFailure(
        "lease.lost",
        "no heartbeat succeeded within the lease TTL; the agent destroyed the sandbox",
      );
    case "fenced":
      return null;
  }
}

/** Null when the step succeeded. Steps are numbered from 1 in messages. */
export function stepFailureVerdict(index: number, command: string, result: StepResult): Verdict | null {
  if (result.exitCode === 0 && result.signal === null) return null;
  const what = `step ${index + 1} (${command.slice(0, 80)})`;
  if (result.limit) {
    return {
      outcome: "user_failure",
      cause: SANDBOX_LIMIT_CAUSES[result.limit],
      message: `${what} ${LIMIT_TEXT[result.limit]} (runs_on.size sets the limits)`,
      exitCode: result.exitCode,
    };
  }
  if (result.signal !== null) {
    return {
      outcome: "user_failure",
      cause: "step.failed",
      message: `${what} was killed by signal ${result.signal}`,
      exitCode: null,
    };
  }
  return {
    outcome: "user_failure",
    cause: "step.failed",
    message: `${what} exited with code ${result.exitCode}`,
    exitCode: result.exitCode,
  };
}

const LIMIT_TEXT: Record<SandboxLimit, string> = {
  disk_full: "failed with the sandbox's disk full",
  oom: "failed after the sandbox ran out of memory (a process was killed)",
  pids_exhausted: "failed after the sandbox reached its process limit",
};
