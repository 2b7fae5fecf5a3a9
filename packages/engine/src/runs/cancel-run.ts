import { withTx, type Db } from "@kiln/db";
import {
  DEFAULT_RETENTION_WINDOWS,
  DomainError,
  isRunTerminal,
  legalSources,
  RUN_TRANSITIONS,
  type RetentionWindows,
} from "@kiln/domain";
import { recordTransition } from "../shared/journal.ts";
import { stampRunRetention } from "../shared/retention-stamp.ts";
import { finishRunIfDone, lockRun } from "./advance-run.ts";
import { cancelJobs } from "./cancel-jobs.ts";

// Guards from the transition tables (cancel_requested: pending -> completed, running -> cancelling).
const ENDS_AT_ONCE_FROM = legalSources(RUN_TRANSITIONS, "cancel_requested", "completed");
const GOES_CANCELLING_FROM = legalSources(RUN_TRANSITIONS, "cancel_requested", "cancelling");

/**
 * Cancel takes the run lock and bumps the cancel version, so it serialises with completion: if it
 * commits first, late completions are refused; if completion committed first, cancel sees that.
 * Jobs not yet running end now; running attempts are asked to stop and the run stays CANCELLING
 * until each is confirmed stopped (by its agent, or by lease expiry plus the watchdog's kill bound).
 */
export async function cancelRun(
  db: Db,
  input: {
    runId: string;
    orgId: string;
    actor: string;
    /**
     * The platform's windows (KILN_RETENTION_WINDOWS) for the run's metadata stamp when this
     * completes it; callers without the app config get the seed's, what an unset variable parses to.
     */
    retention?: RetentionWindows;
  },
): Promise<{ status: string; cancelVersion: number }> {
  const windows = input.retention ?? DEFAULT_RETENTION_WINDOWS;
  return withTx(db, "cancel-run", async (tx) => {
    const run = await lockRun(tx, input.runId, "update");
    if (!run || run.orgId !== input.orgId) throw new DomainError("RUN.NOT_FOUND", "run not found");
    if (isRunTerminal(run.status)) throw new DomainError("RUN.ALREADY_FINISHED", "the run has already finished");
    if (run.status === "cancelling") return { status: run.status, cancelVersion: run.cancelVersion };

    const version = run.cancelVersion + 1;
    if (ENDS_AT_ONCE_FROM.includes(run.status)) {
      await tx.$executeRaw`
        UPDATE workflow_run SET status = 'completed', outcome = 'cancelled', cause = 'run.cancelled', cancel_version = ${version}, finished_at = now()
        WHERE id = ${run.id}::uuid AND status = ANY(${ENDS_AT_ONCE_FROM}::text[])`;
      await stampRunRetention(tx, run.id, windows);
      await recordTransition(tx, {
        orgId: run.orgId,
        runId: run.id,
        entity: "run",
        from: run.status,
        to: "completed",
        reason: "cancel_requested",
        data: { actor: input.actor },
      });
      return { status: "completed", cancelVersion: version };
    }
    await tx.$executeRaw`UPDATE workflow_run SET status = 'cancelling', cancel_version = ${version} WHERE id = ${run.id}::uuid AND status = ANY(${GOES_CANCELLING_FROM}::text[])`;
    await recordTransition(tx, {
      orgId: run.orgId,
      runId: run.id,
      entity: "run",
      from: "running",
      to: "cancelling",
      reason: "cancel_requested",
      data: { actor: input.actor, cancel_version: version },
    });

    await cancelJobs(tx, run, null, { cause: "run.cancelled", message: `cancelled by ${input.actor}` });
    const finished = await finishRunIfDone(tx, { ...run, status: "cancelling" }, windows);
    return { status: finished ? "completed" : "cancelling", cancelVersion: version };
  });
}
