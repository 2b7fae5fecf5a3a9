// A run's ordered transition history (the transition_event log, seed 002's account of what
// happened), for the auditor: every state change of the run, its jobs and attempts, in commit order.
import type { Db } from "@kiln/db";
import { DomainError } from "@kiln/domain";

export interface TransitionView {
  seq: string;
  at: string;
  entity: string;
  job_id: string | null;
  attempt_id: string | null;
  from: string | null;
  to: string;
  reason: string;
  data: unknown;
}

export async function listRunTransitions(
  db: Db,
  input: { orgId: string; runId: string; limit?: number },
): Promise<TransitionView[]> {
  const run = await db.$queryRaw<{ id: string }[]>`
    SELECT id FROM workflow_run WHERE id = ${input.runId}::uuid AND org_id = ${input.orgId}::uuid`;
  if (!run[0]) throw new DomainError("RUN.NOT_FOUND", "run not found");
  const rows = await db.$queryRaw<
    {
      id: bigint;
      at: Date;
      entity: string;
      job_id: string | null;
      attempt_id: string | null;
      from_state: string | null;
      to_state: string;
      reason: string;
      data: unknown;
    }[]
  >`
    SELECT id, at, entity, job_id, attempt_id, from_state, to_state, reason, data FROM transition_event
    WHERE run_id = ${input.runId}::uuid AND org_id = ${input.orgId}::uuid ORDER BY id LIMIT ${input.limit ?? 2000}`;
  return rows.map((r) => ({
    seq: String(r.id),
    at: r.at.toISOString(),
    entity: r.entity,
    job_id: r.job_id,
    attempt_id: r.attempt_id,
    from: r.from_state,
    to: r.to_state,
    reason: r.reason,
    data: r.data,
  }));
}
