import type { Tx } from "@kiln/db";
import { noticeQuotaThresholds } from "./minute-quota.ts";

// The usage row of an attempt that just ended (issue 33, ADR 0045). Called by finishAttempt, inside
// the transaction of the attempt's one guarded end (completion, lease fence, cancel, preemption,
// reclaim): the row commits with that end or not at all, and the unique attempt_id refuses a second.

interface Recorded {
  org_id: string;
  seconds: number;
  counted: boolean;
  /** The UTC month the attempt ended in, 'YYYY-MM-01': the month its seconds count against. */
  month: string;
}

/** Tally shards per org and month: two completions of one org share a row lock 1 time in 16. */
const TALLY_SHARDS = 16;

/** The shard an attempt's seconds are added to: its id's last hex digit (uuids are random there). */
function tallyShard(attemptId: string): number {
  return Number.parseInt(attemptId.slice(-1), 16) % TALLY_SHARDS;
}

export async function recordUsage(tx: Tx, attemptId: string): Promise<void> {
  // Seconds run from the claim (the host slot is the tenant's from then: image preparation included)
  // to the stop: the sandbox's destruction when known (a fenced attempt stopped when its lease ran
  // out), else the end. Billable unless the platform failed it (reclaims and preemptions included);
  // a self-hosted pool's minutes are recorded and never counted against the quota.
  const rows = await tx.$queryRaw<Recorded[]>`
    INSERT INTO usage_event (attempt_id, org_id, repo_id, run_id, job_id, pool, size, isolation, trust_class,
                             outcome, cause, seconds, interruptible, self_hosted, billable, started_at, finished_at)
    SELECT a.id, a.org_id, r.repo_id, a.run_id, a.job_id, a.pool, j.runner_size,
           COALESCE(h.isolation, s.labels->>'isolation', p.min_isolation, 'unknown'), r.trust_class,
           a.outcome, a.cause,
           GREATEST(0, ceil(EXTRACT(EPOCH FROM (LEAST(a.finished_at, COALESCE(a.stopped_at, a.finished_at)) - a.claimed_at))))::int,
           a.on_interruptible, p.owner_org_id IS NOT NULL, a.outcome <> 'platform_failure', a.claimed_at, a.finished_at
    FROM attempt a JOIN job_run j ON j.id = a.job_id JOIN workflow_run r ON r.id = a.run_id
      LEFT JOIN pool p ON p.name = a.pool
      LEFT JOIN agent_session s ON s.id = a.session_id LEFT JOIN runner h ON h.id = s.runner_id
    WHERE a.id = ${attemptId}::uuid AND a.status = 'completed' AND a.outcome IS NOT NULL
    RETURNING org_id, seconds, billable AND NOT self_hosted AS counted,
              to_char(date_trunc('month', finished_at AT TIME ZONE 'UTC'), 'YYYY-MM-DD') AS month`;
  const row = rows[0];
  if (!row) throw new Error(`usage row for attempt ${attemptId} was not written: the attempt has not ended`);
  if (!row.counted || row.seconds === 0) return;
  await tx.$executeRaw`
    INSERT INTO org_minute_tally (org_id, month, shard, seconds)
    VALUES (${row.org_id}::uuid, ${row.month}::date, ${tallyShard(attemptId)}, ${row.seconds})
    ON CONFLICT (org_id, month, shard) DO UPDATE SET seconds = org_minute_tally.seconds + EXCLUDED.seconds`;
  await noticeQuotaThresholds(tx, row.org_id, row.month);
}
