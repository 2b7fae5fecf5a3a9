import type { Db } from "@kiln/db";
import { DomainError } from "@kiln/domain";
import { listFlakyJobs, type FlakyJob } from "./flaky-jobs.ts";
import { rerunFailedJobs, type RerunResult } from "./rerun-failed.ts";

// The admin CLI (scripts/kiln/runs.ts) runs on the server with the database's credentials: it acts
// as the instance's operator, for the org that owns the run or repo it names, through the same use
// cases the API calls (the org comes from the row itself, so the use cases' scoping still holds).

export async function rerunFailedJobsAsOperator(db: Db, input: { runId: string; actor: string }): Promise<RerunResult> {
  const rows = await db.$queryRaw<
    { org_id: string }[]
  >`SELECT org_id FROM workflow_run WHERE id = ${input.runId}::uuid`;
  const orgId = rows[0]?.org_id;
  if (!orgId) throw new DomainError("RUN.NOT_FOUND", "run not found");
  return rerunFailedJobs(db, {
    caller: { tokenId: "cli", orgId, role: "admin", name: input.actor },
    runId: input.runId,
  });
}

export async function listFlakyJobsOfRepo(db: Db, input: { repo: string }): Promise<FlakyJob[]> {
  const rows = await db.$queryRaw<{ id: string; org_id: string }[]>`
    SELECT id, org_id FROM repo WHERE full_name = ${input.repo}`;
  const repo = rows[0];
  if (!repo) throw new DomainError("REPO.NOT_FOUND", `no repository named ${JSON.stringify(input.repo)}`);
  return listFlakyJobs(db, { orgId: repo.org_id, repoId: repo.id });
}
