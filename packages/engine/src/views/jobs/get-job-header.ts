import type { DbOrTx } from "@kiln/db";
import { classifyOutcome, DomainError, isOutcome, type OutcomeClass } from "@kiln/domain";
import type { TenantScope } from "../tenants/resolve-tenant.ts";

export interface JobHeaderView {
  id: string;
  name: string;
  status: string;
  outcome: string | null;
  outcome_class: OutcomeClass | null;
  cause: string | null;
  cause_message: string | null;
  epoch: number;
  run_id: string;
  run_status: string;
  repo_name: string;
  ref: string | null;
  commit_sha: string;
}

/** The job log page's header; the log bytes themselves come from the log API, not from here. */
export async function getJobHeader(
  db: DbOrTx,
  scope: TenantScope,
  input: { runId: string; jobId: string },
): Promise<JobHeaderView> {
  const rows = await db.$queryRaw<Omit<JobHeaderView, "outcome_class">[]>`
    SELECT j.id, j.name, j.status, j.outcome, j.cause, j.cause_message, j.current_epoch AS epoch, j.run_id,
           r.status AS run_status, repo.full_name AS repo_name, r.ref, r.commit_sha
    FROM job_run j
    JOIN workflow_run r ON r.id = j.run_id AND r.org_id = j.org_id
    JOIN repo ON repo.id = r.repo_id
    WHERE j.id = ${input.jobId}::uuid AND j.run_id = ${input.runId}::uuid AND j.org_id = ${scope.orgId}::uuid`;
  const j = rows[0];
  if (!j) throw new DomainError("JOB.NOT_FOUND", "job not found");
  return { ...j, outcome_class: j.outcome !== null && isOutcome(j.outcome) ? classifyOutcome(j.outcome) : null };
}
