import type { Db } from "@kiln/db";
import { DomainError } from "@kiln/domain";

export interface RunEgressEvent {
  job_id: string;
  job_name: string;
  attempt: number;
  host: string;
  port: number;
  decision: string;
  reason: string;
  count: number;
  at: string;
}

/** GET /v1/workflow-runs/{id}/egress: the run's egress decisions, oldest first (another org's run is a 404). */
export async function listRunEgress(
  db: Db,
  input: { orgId: string; runId: string; limit?: number },
): Promise<{ run_id: string; events: RunEgressEvent[] }> {
  const runs = await db.$queryRaw<
    { id: string }[]
  >`SELECT id FROM workflow_run WHERE id = ${input.runId}::uuid AND org_id = ${input.orgId}::uuid`;
  if (!runs[0]) throw new DomainError("RUN.NOT_FOUND", "run not found");
  const limit = Math.min(Math.max(input.limit ?? 1000, 1), 5000);
  const rows = await db.$queryRaw<
    {
      job_id: string;
      job_name: string;
      epoch: number;
      host: string;
      port: number;
      decision: string;
      reason: string;
      count: number;
      at: Date;
    }[]
  >`
    SELECT e.job_id, j.name AS job_name, e.epoch, e.host, e.port, e.decision, e.reason, e.count, e.at
    FROM egress_event e JOIN job_run j ON j.id = e.job_id
    WHERE e.run_id = ${input.runId}::uuid AND e.org_id = ${input.orgId}::uuid
    ORDER BY e.at, e.id LIMIT ${limit}`;
  return {
    run_id: input.runId,
    events: rows.map((r) => ({
      job_id: r.job_id,
      job_name: r.job_name,
      attempt: r.epoch,
      host: r.host,
      port: r.port,
      decision: r.decision,
      reason: r.reason,
      count: r.count,
      at: r.at.toISOString(),
    })),
  };
}
