import type { Db } from "@kiln/db";
import { isDomainError, type RetentionWindows } from "@kiln/domain";
import { cancelRun } from "./cancel-run.ts";

// Pull requests (issue 19): a closed PR's unfinished runs are cancelled, and a workflow with
// `pull_request: {cancel_superseded: true}` cancels a PR's older unfinished runs of the same
// workflow once a newer commit's run is frozen (the option lives in the workflow file, which is
// only known at freeze). Both go through cancelRun, the one cancel use case, so a cancel racing a
// completion resolves as it does from the dashboard; both are idempotent (a finished run is skipped).

async function cancelAll(
  db: Db,
  runs: { id: string; org_id: string }[],
  actor: string,
  retention: RetentionWindows | undefined,
): Promise<string[]> {
  const cancelled: string[] = [];
  for (const r of runs) {
    try {
      await cancelRun(db, { runId: r.id, orgId: r.org_id, actor, retention });
      cancelled.push(r.id);
    } catch (err) {
      // Finished between the listing and the cancel: nothing to do.
      if (isDomainError(err) && err.code === "RUN.ALREADY_FINISHED") continue;
      throw err;
    }
  }
  return cancelled;
}

/** `pull_request` `closed` (merged or not): every unfinished run of that PR. */
export async function cancelPullRequestRuns(
  db: Db,
  input: { repoId: string; number: number; retention?: RetentionWindows },
): Promise<string[]> {
  const runs = await db.$queryRaw<{ id: string; org_id: string }[]>`
    SELECT r.id, r.org_id FROM run_pull_request p JOIN workflow_run r ON r.id = p.run_id
    WHERE p.repo_id = ${input.repoId}::uuid AND p.number = ${input.number} AND r.status <> 'completed'
    ORDER BY r.created_at`;
  return cancelAll(db, runs, `forge: pull request #${input.number} closed`, input.retention);
}

/**
 * After `runId` was frozen: if its workflow opts in, cancel the same PR's unfinished runs of the
 * same workflow that were admitted before it. Never a newer one: a late freeze of an older commit
 * must not cancel the run of the commit that superseded it.
 */
export async function cancelSupersededRuns(db: Db, runId: string, retention?: RetentionWindows): Promise<string[]> {
  const runs = await db.$queryRaw<{ id: string; org_id: string }[]>`
    SELECT o.id, o.org_id
    FROM workflow_run r
    JOIN run_pull_request p ON p.run_id = r.id
    JOIN run_pull_request op ON op.repo_id = p.repo_id AND op.number = p.number AND op.run_id <> r.id
    JOIN workflow_run o ON o.id = op.run_id
    WHERE r.id = ${runId}::uuid
      AND COALESCE((r.definition->'pullRequest'->>'cancelSuperseded')::boolean, false)
      AND o.workflow_path = r.workflow_path AND o.status <> 'completed'
      AND (o.created_at, o.id) < (r.created_at, r.id)
    ORDER BY o.created_at`;
  if (runs.length === 0) return [];
  const pr = await db.$queryRaw<
    { number: number }[]
  >`SELECT number FROM run_pull_request WHERE run_id = ${runId}::uuid`;
  return cancelAll(
    db,
    runs,
    `forge: superseded by a newer commit on pull request #${pr[0]?.number ?? "?"} (run ${runId})`,
    retention,
  );
}
