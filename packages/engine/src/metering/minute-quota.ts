import { Prisma, withTx, type Db, type DbOrTx, type Tx } from "@kiln/db";
import { DomainError } from "@kiln/domain";
import { recordAuditEvent } from "../audit/index.ts";

// Minute quotas per org and UTC month (issue 33, ADR 0045). An org's month total is the sum of its
// tally shards (at most 16 rows, read without locks); nothing here keeps one row per org that every
// completion must lock. At 100% the org's new jobs on platform pools wait READY with the reason
// QUOTA_WAIT_REASON: the dispatch view leaves them out and the claim refuses them; raising the quota
// or the month rolling over lets them start, because the check is always against the current month.

export const QUOTA_WAIT_REASON = "quota.minutes_exhausted";

/** The current UTC month as a date, in SQL: the month every check is against. */
const CURRENT_MONTH_SQL = Prisma.sql`date_trunc('month', now() AT TIME ZONE 'UTC')::date`;

/**
 * Orgs whose minute quota is used up this month, as a subquery of org ids. Only orgs with a quota are
 * read (a partial index); each costs one probe of at most 16 tally rows.
 */
const EXHAUSTED_ORGS_SQL = Prisma.sql`(SELECT o.id FROM org o WHERE o.minute_quota IS NOT NULL
  AND (SELECT COALESCE(sum(t.seconds), 0) FROM org_minute_tally t
       WHERE t.org_id = o.id AND t.month = date_trunc('month', now() AT TIME ZONE 'UTC')::date) >= o.minute_quota::bigint * 60)`;

/**
 * The candidate filter of the dispatch views (advisory; the claim re-checks in its commit statement):
 * a job of `pool` is offered unless its org is out of minutes and the pool is not the org's own.
 */
export function withinMinuteQuotaSql(pool: string, orgColumn: Prisma.Sql): Prisma.Sql {
  return Prisma.sql`(EXISTS (SELECT 1 FROM pool qp WHERE qp.name = ${pool} AND qp.owner_org_id IS NOT NULL)
    OR ${orgColumn} NOT IN ${EXHAUSTED_ORGS_SQL})`;
}

/**
 * The same rule for a query over many pools (the fleet metrics): a job row whose `pool` and org
 * columns are given is not held back by its org's minute quota.
 */
export function notWaitingForMinutesSql(poolColumn: Prisma.Sql, orgColumn: Prisma.Sql): Prisma.Sql {
  return Prisma.sql`(EXISTS (SELECT 1 FROM pool qp WHERE qp.name = ${poolColumn} AND qp.owner_org_id IS NOT NULL)
    OR ${orgColumn} NOT IN ${EXHAUSTED_ORGS_SQL})`;
}

/** The READY jobs of a run that wait because their org is out of minutes (for the queue view). */
export async function jobsWaitingForMinutes(db: DbOrTx, runId: string): Promise<Set<string>> {
  const rows = await db.$queryRaw<{ id: string }[]>`
    SELECT j.id FROM job_run j WHERE j.run_id = ${runId}::uuid AND j.status = 'ready'
      AND j.org_id IN ${EXHAUSTED_ORGS_SQL}
      AND NOT EXISTS (SELECT 1 FROM pool p WHERE p.name = j.pool AND p.owner_org_id IS NOT NULL)`;
  return new Set(rows.map((r) => r.id));
}

export interface MinuteQuotaStatus {
  /** Minutes per month; null = unlimited. */
  quotaMinutes: number | null;
  /** Seconds counted against the quota this month (platform pools, billable). */
  usedSeconds: number;
  /** 'YYYY-MM-01' (UTC). */
  month: string;
  /** Whole percent of the quota used; null when unlimited. */
  percent: number | null;
  level: "unlimited" | "ok" | "warning" | "exhausted";
}

export async function minuteQuotaStatus(db: DbOrTx, orgId: string): Promise<MinuteQuotaStatus> {
  const rows = await db.$queryRaw<{ quota: number | null; used: bigint; month: string }[]>`
    SELECT o.minute_quota AS quota, to_char(${CURRENT_MONTH_SQL}, 'YYYY-MM-DD') AS month,
           (SELECT COALESCE(sum(t.seconds), 0)::bigint FROM org_minute_tally t
            WHERE t.org_id = o.id AND t.month = ${CURRENT_MONTH_SQL}) AS used
    FROM org o WHERE o.id = ${orgId}::uuid`;
  const r = rows[0];
  if (!r) throw new DomainError("ORG.NOT_FOUND", "no such org");
  return quotaStatusOf(r.quota, Number(r.used), r.month);
}

function quotaStatusOf(quota: number | null, used: number, month: string): MinuteQuotaStatus {
  if (quota === null) return { quotaMinutes: null, usedSeconds: used, month, percent: null, level: "unlimited" };
  const limit = quota * 60;
  const percent = limit === 0 ? 100 : Math.floor((used * 100) / limit);
  const level = used >= limit ? "exhausted" : percent >= 80 ? "warning" : "ok";
  return { quotaMinutes: quota, usedSeconds: used, month, percent, level };
}

/** The forge status's words for an org at or over 80% of its minutes; null below that or unlimited. */
export function quotaStatusText(s: MinuteQuotaStatus): string | null {
  if (s.level === "exhausted") return "minute quota used up: new jobs wait until it is raised or the month ends";
  if (s.level === "warning") return `${s.percent}% of this month's minutes used`;
  return null;
}

/**
 * Records each threshold the org's month total has reached, once per org, month and threshold (the
 * notice's primary key), with an audit event in the same transaction. Idempotent: called by every
 * counted completion, by a quota change, and by the reconciler (which catches the crossing two racing
 * completions each missed, reading the other's tally before it committed).
 */
export async function noticeQuotaThresholds(tx: Tx, orgId: string, month: string): Promise<number[]> {
  const rows = await tx.$queryRaw<{ threshold: number; used: bigint; quota: number }[]>`
    WITH q AS (SELECT minute_quota FROM org WHERE id = ${orgId}::uuid AND minute_quota IS NOT NULL),
         u AS (SELECT COALESCE(sum(seconds), 0)::bigint AS s FROM org_minute_tally
               WHERE org_id = ${orgId}::uuid AND month = ${month}::date)
    INSERT INTO quota_notice (org_id, month, threshold)
    SELECT ${orgId}::uuid, ${month}::date, t FROM q, u, unnest(ARRAY[80, 100]::smallint[]) AS t
    WHERE u.s * 100 >= q.minute_quota::bigint * 60 * t
    ON CONFLICT DO NOTHING
    RETURNING threshold, (SELECT s FROM u) AS used, (SELECT minute_quota FROM q) AS quota`;
  for (const r of rows) {
    await recordAuditEvent(tx, {
      orgId,
      kind: "quota.minutes_threshold",
      actor: "system:metering",
      subject: `${month.slice(0, 7)}:${r.threshold}`,
      data: { threshold: r.threshold, month, usedSeconds: Number(r.used), quotaMinutes: r.quota },
    });
  }
  return rows.map((r) => r.threshold);
}

/** The reconciler's pass: orgs with a quota and counted use this month get their missed notices. */
export async function settleQuotaNotices(db: Db, limit = 100): Promise<number> {
  const orgs = await db.$queryRaw<{ id: string; month: string }[]>`
    SELECT o.id, to_char(${CURRENT_MONTH_SQL}, 'YYYY-MM-DD') AS month FROM org o
    WHERE o.minute_quota IS NOT NULL
      AND EXISTS (SELECT 1 FROM org_minute_tally t WHERE t.org_id = o.id AND t.month = ${CURRENT_MONTH_SQL})
    ORDER BY o.id LIMIT ${limit}`;
  let n = 0;
  for (const o of orgs) {
    n += (await withTx(db, "settle-quota-notices", (tx) => noticeQuotaThresholds(tx, o.id, o.month))).length;
  }
  return n;
}

/**
 * Sets an org's monthly minute quota (null = unlimited), with an audit event, in one transaction.
 * The operator's path (`kiln quota set`) and the platform admin's; raising the quota lets waiting
 * jobs start at the next claim, lowering it may give this month's notices at once.
 */
export async function setMinuteQuota(
  db: Db,
  input: { orgSlug: string; minutes: number | null; actor: string },
): Promise<MinuteQuotaStatus> {
  const { minutes } = input;
  if (minutes !== null && (!Number.isInteger(minutes) || minutes < 0 || minutes > 100_000_000))
    throw new DomainError("REQUEST.INVALID", "minutes must be a whole number from 0 to 100000000, or unlimited");
  return withTx(db, "set-minute-quota", async (tx) => {
    const rows = await tx.$queryRaw<{ id: string; before: number | null; month: string }[]>`
      SELECT id, minute_quota AS before, to_char(${CURRENT_MONTH_SQL}, 'YYYY-MM-DD') AS month
      FROM org WHERE slug = ${input.orgSlug} FOR UPDATE`;
    const org = rows[0];
    if (!org) throw new DomainError("ORG.NOT_FOUND", `no org ${input.orgSlug}`);
    await tx.$executeRaw`UPDATE org SET minute_quota = ${minutes}::int WHERE id = ${org.id}::uuid`;
    await recordAuditEvent(tx, {
      orgId: org.id,
      kind: "quota.minutes_changed",
      actor: input.actor,
      subject: input.orgSlug,
      data: { before: org.before, after: minutes },
    });
    await noticeQuotaThresholds(tx, org.id, org.month);
    return minuteQuotaStatus(tx, org.id);
  });
}
