import { withTx, type Db } from "@kiln/db";
import { DEFAULT_RETENTION_WINDOWS, legalSources, RUN_TRANSITIONS, type RetentionWindows } from "@kiln/domain";
import type { Logger } from "@kiln/logger";
import type { PinImagesResult } from "../images/index.ts";
import type { fetchWorkflowFile } from "../source/index.ts";
import { recordTransition } from "../shared/journal.ts";
import { stampRunRetention } from "../shared/retention-stamp.ts";
import { lockRun } from "./advance-run.ts";

// How a freeze that cannot finish ends: retried, or the run completed with the cause.

// Guard from the run table: a run fails to freeze only while pending.
const FREEZE_FAILS_FROM = legalSources(RUN_TRANSITIONS, "freeze_failed", "completed");

export type FreezeOutcome = "frozen" | "invalid" | "not_pending" | "retry_later" | "gave_up";

type FetchFailure = Extract<Awaited<ReturnType<typeof fetchWorkflowFile>>, { ok: false }>;

/** The workflow file could not be fetched: retried while tries remain if git was unreachable. */
export async function failFetch(
  db: Db,
  input: { runId: string; retention?: RetentionWindows; finalTry: boolean },
  file: FetchFailure,
  log: Logger,
): Promise<FreezeOutcome> {
  if (file.kind === "unreachable") {
    if (!input.finalTry) {
      log.warn("workflow fetch failed; freeze will be retried", { err: file.message });
      return "retry_later";
    }
    await failFreeze(db, input, "platform_failure", "source.unreachable", file.message, null);
    return "gave_up";
  }
  const cause =
    file.kind === "not_found"
      ? "workflow.not_found"
      : file.kind === "refused"
        ? "source.clone_url_refused"
        : file.kind === "auth_refused"
          ? "source.auth_refused"
          : "workflow.invalid";
  // A clone URL the operator's source policy refuses is policy, not the file's fault (issue 20).
  const outcome = file.kind === "refused" ? "blocked_by_policy" : "user_failure";
  await failFreeze(db, input, outcome, cause, file.message, null);
  return "invalid";
}

/** The images could not be pinned: retried while tries remain if the registry was unreachable. */
export async function failImages(
  db: Db,
  input: { runId: string; retention?: RetentionWindows },
  images: Extract<PinImagesResult, { ok: false }>,
  workflowHash: string,
): Promise<FreezeOutcome> {
  await failFreeze(
    db,
    input,
    images.kind === "unreachable"
      ? "platform_failure"
      : images.kind === "policy"
        ? "blocked_by_policy"
        : "user_failure",
    images.cause,
    images.message,
    workflowHash,
  );
  return images.kind === "unreachable" ? "gave_up" : "invalid";
}

export async function failFreeze(
  db: Db,
  { runId, retention }: { runId: string; retention?: RetentionWindows },
  outcome: "user_failure" | "platform_failure" | "blocked_by_policy",
  cause: string,
  message: string,
  workflowHash: string | null,
): Promise<void> {
  await withTx(db, "freeze-failed", async (tx) => {
    const locked = await lockRun(tx, runId, "update");
    if (!locked || !FREEZE_FAILS_FROM.includes(locked.status)) return;
    await tx.$executeRaw`
      UPDATE workflow_run SET status = 'completed', outcome = ${outcome}, cause = ${cause}, cause_message = ${message},
        workflow_hash = COALESCE(${workflowHash}, workflow_hash), finished_at = now()
      WHERE id = ${runId}::uuid AND status = ANY(${FREEZE_FAILS_FROM}::text[])`;
    await stampRunRetention(tx, runId, retention ?? DEFAULT_RETENTION_WINDOWS);
    await recordTransition(tx, {
      orgId: locked.orgId,
      runId,
      entity: "run",
      from: "pending",
      to: "completed",
      reason: "freeze_failed",
      data: { outcome, cause, message },
    });
  });
}
