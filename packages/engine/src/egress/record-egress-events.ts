import type { Db } from "@kiln/db";
import { DomainError, type agentProtocol } from "@kiln/domain";
import type { z } from "zod";

export type EgressEventsReport = z.infer<typeof agentProtocol.egressEventsRequest>;

/**
 * Records a batch of egress decisions the host proxy made for one attempt. Fenced like every
 * agent call: only the job's current epoch, while its attempt is running, may record; a stale
 * epoch gets ATTEMPT.STALE_EPOCH (409). One guarded INSERT ... SELECT, so the fence and the write
 * cannot be separated by a completion or a re-dispatch. A retried batch (same batch_seq) inserts
 * nothing twice.
 */
export async function recordEgressEvents(
  db: Db,
  claims: { attemptId: string; jobId: string; epoch: number },
  report: EgressEventsReport,
): Promise<{ recorded: number }> {
  if (report.epoch !== claims.epoch)
    throw new DomainError("ATTEMPT.STALE_EPOCH", `epoch ${report.epoch} is not the epoch of this job token`);
  const items = report.events.map((e, i) => ({ ...e, item: i }));
  const inserted = await db.$queryRaw<{ live: boolean; n: bigint }[]>`
    WITH cur AS (
      SELECT a.id, a.org_id, a.run_id, a.job_id, a.epoch FROM attempt a JOIN job_run j ON j.id = a.job_id
      WHERE a.id = ${claims.attemptId}::uuid AND a.job_id = ${claims.jobId}::uuid AND a.epoch = ${claims.epoch}
        AND a.status = 'running' AND j.current_epoch = a.epoch
      FOR SHARE OF a
    ), ins AS (
      INSERT INTO egress_event (org_id, run_id, job_id, attempt_id, epoch, host, port, decision, reason, count, batch_seq, item, at)
      SELECT cur.org_id, cur.run_id, cur.job_id, cur.id, cur.epoch, e.host, e.port, e.decision, e.reason, e.count, ${report.batch_seq}, e.item, e.at::timestamptz
      FROM cur, jsonb_to_recordset(${JSON.stringify(items)}::jsonb)
        AS e(host text, port int, decision text, reason text, count int, item int, at text)
      ON CONFLICT (attempt_id, batch_seq, item) DO NOTHING
      RETURNING 1
    )
    SELECT EXISTS (SELECT 1 FROM cur) AS live, (SELECT count(*) FROM ins) AS n`;
  const r = inserted[0];
  if (!r?.live) {
    const known = await db.$queryRaw<
      { n: bigint }[]
    >`SELECT count(*) AS n FROM attempt WHERE id = ${claims.attemptId}::uuid AND job_id = ${claims.jobId}::uuid`;
    if ((known[0]?.n ?? 0n) === 0n) throw new DomainError("ATTEMPT.NOT_FOUND", "unknown attempt");
    throw new DomainError("ATTEMPT.STALE_EPOCH", `epoch ${claims.epoch} is not the job's current, running attempt`);
  }
  return { recorded: Number(r.n) };
}
