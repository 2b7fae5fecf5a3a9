// What a run or a job looks like on the forge (issue 19): a commit status (and, for a GitHub App,
// a check run) per context. Pure: the engine loads the state, this decides the words.
import { assertNever } from "../shared/errors.ts";
import type { Outcome } from "../runs/index.ts";

/** GitHub's commit status states (Gitea and Forgejo accept the same four). */
export const FORGE_STATES = ["pending", "success", "failure", "error"] as const;
export type ForgeState = (typeof FORGE_STATES)[number];

/** GitHub refuses longer descriptions (422); it counts characters, not bytes. */
export const FORGE_DESCRIPTION_MAX = 140;

export function runContext(workflowPath: string): string {
  return `kiln/${workflowPath}`;
}

export function jobContext(workflowPath: string, jobName: string): string {
  return `kiln/${workflowPath}/${jobName}`;
}

export interface StatusSubject {
  /** The run's or job's lifecycle status (pending, ready, running, cancelling, completed, ...). */
  status: string;
  outcome: Outcome | null;
  cause: string | null;
  causeMessage: string | null;
  /** Attempts that ended as platform failures and were retried (shown on a success: it was not free). */
  platformRetries: number;
}

export interface ForgeStatusText {
  state: ForgeState;
  description: string;
}

/**
 * The final state is the outcome's (seed 002: whose problem is it): a platform failure is `error`
 * and says it was Kiln's fault, never the user's; a policy block is `failure` with the policy's
 * reason. Anything not completed is `pending`.
 */
export function forgeStatusOf(s: StatusSubject): ForgeStatusText {
  if (s.status !== "completed" || s.outcome === null) {
    const phase = s.status === "pending" || s.status === "ready" ? "queued" : s.status;
    return { state: "pending", description: clip(`Kiln: ${phase}`) };
  }
  const why = causeText(s);
  switch (s.outcome) {
    case "success": {
      const n = s.platformRetries;
      const retried = n > 0 ? ` after ${n} platform retr${n === 1 ? "y" : "ies"} (Kiln's fault, not your code)` : "";
      return { state: "success", description: clip(`Kiln: succeeded${retried}`) };
    }
    case "user_failure":
      return { state: "failure", description: clip(`Kiln: failed in your code: ${why}`) };
    case "timed_out":
      return { state: "failure", description: clip(`Kiln: timed out: ${why}`) };
    case "platform_failure":
      return { state: "error", description: clip(`Kiln platform failure, not your code: ${why}`) };
    case "cancelled":
      return { state: "error", description: clip(`Kiln: cancelled: ${why}`) };
    case "blocked_by_policy":
      return {
        state: "failure",
        description: clip(`Kiln: blocked by policy: ${s.causeMessage ?? s.cause ?? "no reason given"}`),
      };
    default:
      return assertNever(s.outcome);
  }
}

/** Check-run fields for the same subject (Checks API: status, and a conclusion once completed). */
export function checkRunOf(s: StatusSubject): {
  status: "queued" | "in_progress" | "completed";
  conclusion: "success" | "failure" | "cancelled" | "timed_out" | null;
} {
  if (s.status !== "completed" || s.outcome === null)
    return { status: s.status === "pending" || s.status === "ready" ? "queued" : "in_progress", conclusion: null };
  switch (s.outcome) {
    case "success":
      return { status: "completed", conclusion: "success" };
    case "cancelled":
      return { status: "completed", conclusion: "cancelled" };
    case "timed_out":
      return { status: "completed", conclusion: "timed_out" };
    // The Checks API has no "error": the title and summary say whose fault it was.
    case "user_failure":
    case "platform_failure":
    case "blocked_by_policy":
      return { status: "completed", conclusion: "failure" };
    default:
      return assertNever(s.outcome);
  }
}

function causeText(s: StatusSubject): string {
  if (s.cause && s.causeMessage) return `${s.cause} (${s.causeMessage})`;
  return s.cause ?? s.causeMessage ?? "no cause recorded";
}

/** At most FORGE_DESCRIPTION_MAX characters (code points), an ellipsis marking a cut. */
export function clip(text: string, max = FORGE_DESCRIPTION_MAX): string {
  const chars = [...text.replace(/\s+/g, " ").trim()];
  return chars.length <= max ? chars.join("") : `${chars.slice(0, max - 1).join("")}…`;
}
