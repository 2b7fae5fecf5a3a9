import type { DbOrTx } from "@kiln/db";
import { DomainError } from "@kiln/domain";
import { minuteQuotaStatus, type MinuteQuotaStatus } from "./minute-quota.ts";

// Showback (issue 33, ADR 0045): an org's job-minutes by repo, pool and size from its usage rows, and
// the artifact and cache bytes it holds by retention class. Every query is scoped to the org in its
// WHERE clause; the caller resolved the org from the caller's own membership.

export interface UsageQuery {
  orgId: string;
  /** Inclusive start and exclusive end of the period, by the attempts' end time. */
  from: Date;
  to: Date;
}

interface MinutesRow {
  repo: string;
  pool: string;
  size: string;
  selfHosted: boolean;
  attempts: number;
  seconds: number;
  billableSeconds: number;
}

interface StorageRow {
  repo: string;
  kind: "artifact" | "cache";
  retentionClass: string;
  objects: number;
  bytes: number;
}

export interface UsageReport {
  from: string;
  to: string;
  quota: MinuteQuotaStatus;
  totals: { attempts: number; seconds: number; billableSeconds: number; quotaSeconds: number };
  minutes: MinutesRow[];
  /** Seconds per UTC day of the period (days without use are absent). */
  daily: { day: string; seconds: number; billableSeconds: number }[];
  /** What the org stores now (objects not yet expired or deleted), created before `to`. */
  storage: StorageRow[];
}

const WHEN = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2})?)?$/;

function when(v: string, name: string): Date {
  // A bare date is UTC midnight; anything else Date would guess at is refused.
  const d = WHEN.test(v) ? new Date(v.length === 10 ? `${v}T00:00:00Z` : v) : new Date(Number.NaN);
  if (Number.isNaN(d.getTime())) throw new DomainError("REQUEST.INVALID", `${name} must be an ISO date or time`);
  return d;
}

/** A report's period from `from`/`to` as the API and the CLI take them: default, this UTC month to now. */
export function usagePeriod(from: string | undefined, to: string | undefined, now: Date): { from: Date; to: Date } {
  const monthStart = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
  return { from: from ? when(from, "from") : monthStart, to: to ? when(to, "to") : now };
}

/** Longest period one report covers: a year and a day (a leap year's January to January). */
const MAX_PERIOD_MS = 367 * 24 * 3600 * 1000;

export async function usageReport(db: DbOrTx, q: UsageQuery): Promise<UsageReport> {
  if (Number.isNaN(q.from.getTime()) || Number.isNaN(q.to.getTime()))
    throw new DomainError("REQUEST.INVALID", "from and to must be ISO dates or times");
  if (q.to.getTime() <= q.from.getTime()) throw new DomainError("REQUEST.INVALID", "to must be after from");
  if (q.to.getTime() - q.from.getTime() > MAX_PERIOD_MS)
    throw new DomainError("REQUEST.INVALID", "a usage report covers at most 367 days");
  const [minutes, daily, storage, quota] = await Promise.all([
    minutesOf(db, q),
    dailyOf(db, q),
    storageOf(db, q),
    minuteQuotaStatus(db, q.orgId),
  ]);
  const totals = { attempts: 0, seconds: 0, billableSeconds: 0, quotaSeconds: 0 };
  for (const m of minutes) {
    totals.attempts += m.attempts;
    totals.seconds += m.seconds;
    totals.billableSeconds += m.billableSeconds;
    if (!m.selfHosted) totals.quotaSeconds += m.billableSeconds;
  }
  return { from: q.from.toISOString(), to: q.to.toISOString(), quota, totals, minutes, daily, storage };
}

async function minutesOf(db: DbOrTx, q: UsageQuery): Promise<MinutesRow[]> {
  const rows = await db.$queryRaw<
    {
      repo: string;
      pool: string;
      size: string;
      self_hosted: boolean;
      attempts: number;
      seconds: bigint;
      billable: bigint;
    }[]
  >`
    SELECT rp.full_name AS repo, u.pool, u.size, u.self_hosted, count(*)::int AS attempts,
           sum(u.seconds)::bigint AS seconds, COALESCE(sum(u.seconds) FILTER (WHERE u.billable), 0)::bigint AS billable
    FROM usage_event u JOIN repo rp ON rp.id = u.repo_id AND rp.org_id = u.org_id
    WHERE u.org_id = ${q.orgId}::uuid AND u.finished_at >= ${q.from} AND u.finished_at < ${q.to}
    GROUP BY rp.full_name, u.pool, u.size, u.self_hosted ORDER BY rp.full_name, u.pool, u.size, u.self_hosted`;
  return rows.map((r) => ({
    repo: r.repo,
    pool: r.pool,
    size: r.size,
    selfHosted: r.self_hosted,
    attempts: r.attempts,
    seconds: Number(r.seconds),
    billableSeconds: Number(r.billable),
  }));
}

async function dailyOf(db: DbOrTx, q: UsageQuery): Promise<UsageReport["daily"]> {
  const rows = await db.$queryRaw<{ day: string; seconds: bigint; billable: bigint }[]>`
    SELECT to_char(date_trunc('day', u.finished_at AT TIME ZONE 'UTC'), 'YYYY-MM-DD') AS day,
           sum(u.seconds)::bigint AS seconds, COALESCE(sum(u.seconds) FILTER (WHERE u.billable), 0)::bigint AS billable
    FROM usage_event u
    WHERE u.org_id = ${q.orgId}::uuid AND u.finished_at >= ${q.from} AND u.finished_at < ${q.to}
    GROUP BY 1 ORDER BY 1`;
  return rows.map((r) => ({ day: r.day, seconds: Number(r.seconds), billableSeconds: Number(r.billable) }));
}

async function storageOf(db: DbOrTx, q: UsageQuery): Promise<StorageRow[]> {
  // Artifacts by the retention class their seal wrote (ADR 0036); caches are kept by least-recent use
  // under the org's cache quota, one class of their own.
  const rows = await db.$queryRaw<
    { repo: string; kind: "artifact" | "cache"; retention_class: string; objects: number; bytes: bigint }[]
  >`
    SELECT rp.full_name AS repo, 'artifact' AS kind, COALESCE(g.retention_class, 'unclassified') AS retention_class,
           count(*)::int AS objects, COALESCE(sum(COALESCE(g.stored_size_bytes, g.size_bytes)), 0)::bigint AS bytes
    FROM artifact_generation g JOIN workflow_run r ON r.id = g.run_id JOIN repo rp ON rp.id = r.repo_id
    WHERE r.org_id = ${q.orgId}::uuid AND g.state = 'sealed' AND g.expired_at IS NULL AND g.object_deleted_at IS NULL
      AND g.created_at < ${q.to}
    GROUP BY rp.full_name, 3
    UNION ALL
    SELECT rp.full_name, 'cache', 'lru', count(*)::int, COALESCE(sum(c.size_bytes), 0)::bigint
    FROM cache_entry c JOIN repo rp ON rp.id = c.repo_id
    WHERE c.org_id = ${q.orgId}::uuid AND c.evicted_at IS NULL AND c.object_deleted_at IS NULL AND c.created_at < ${q.to}
      AND c.state = 'bound'
    GROUP BY rp.full_name
    ORDER BY 1, 2, 3`;
  return rows.map((r) => ({
    repo: r.repo,
    kind: r.kind,
    retentionClass: r.retention_class,
    objects: r.objects,
    bytes: Number(r.bytes),
  }));
}

const CSV_HEADER = "section,repo,pool,size,self_hosted,retention_class,attempts,seconds,billable_seconds,objects,bytes";

function cell(v: string | number | boolean): string {
  const s = String(v);
  // Repo names are tenant input: quote what would break a cell, and defuse spreadsheet formulas.
  const safe = /^[=+\-@\t\r]/.test(s) ? `'${s}` : s;
  return /[",\n\r]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}

/** The report as CSV: one `minutes` line per repo, pool, size and hosting; one `storage` line per class. */
export function usageCsv(r: UsageReport): string {
  const lines = [CSV_HEADER];
  for (const m of r.minutes)
    lines.push(
      ["minutes", m.repo, m.pool, m.size, m.selfHosted, "", m.attempts, m.seconds, m.billableSeconds, "", ""]
        .map(cell)
        .join(","),
    );
  for (const s of r.storage)
    lines.push(["storage", s.repo, "", "", "", s.retentionClass, "", "", "", s.objects, s.bytes].map(cell).join(","));
  return `${lines.join("\n")}\n`;
}
