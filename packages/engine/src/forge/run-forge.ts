import type { Db } from "@kiln/db";

/** One context's delivery state, as the run page's panel and GET /v1/workflow-runs/{id} show it. */
export interface ForgeStatusView {
  context: string;
  job_id: string | null;
  /** What Kiln wants the forge to show... */
  state: string;
  description: string;
  /** ...and what the forge was last told (null: nothing delivered yet). */
  delivered_state: string | null;
  delivered_at: string | null;
  /** delivered: the forge shows the wanted state; pending: not yet (see last_error / next_attempt_at). */
  delivery: "delivered" | "pending";
  attempts: number;
  last_http_status: number | null;
  last_error: string | null;
  next_attempt_at: string | null;
  check_run_id: number | null;
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);

/** Statuses on the run's commit that this run set (a newer run on the same commit owns them after). */
export async function listRunForgeStatuses(
  db: Db,
  input: { orgId: string; runId: string },
): Promise<ForgeStatusView[]> {
  const rows = await db.$queryRaw<
    {
      context: string;
      job_id: string | null;
      state: string;
      description: string;
      delivered_state: string | null;
      delivered_at: Date | null;
      delivered: boolean;
      attempts: number;
      last_http_status: number | null;
      last_error: string | null;
      next_attempt_at: Date | null;
      check_run_id: bigint | null;
    }[]
  >`
    SELECT context, job_id, state, description, delivered_state, delivered_at, delivered_seq >= desired_seq AS delivered,
           attempts, last_http_status, last_error, next_attempt_at, check_run_id
    FROM forge_status WHERE run_id = ${input.runId}::uuid AND org_id = ${input.orgId}::uuid
    ORDER BY job_id NULLS FIRST, context`;
  return rows.map((r) => ({
    context: r.context,
    job_id: r.job_id,
    state: r.state,
    description: r.description,
    delivered_state: r.delivered_state,
    delivered_at: iso(r.delivered_at),
    delivery: r.delivered ? "delivered" : "pending",
    attempts: r.attempts,
    last_http_status: r.last_http_status,
    last_error: r.last_error,
    next_attempt_at: iso(r.next_attempt_at),
    check_run_id: r.check_run_id === null ? null : Number(r.check_run_id),
  }));
}
