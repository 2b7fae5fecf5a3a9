// Where one attempt's log stands: the row readers poll and the follower decides from.
import { DomainError, type LogState, type LogStream } from "@kiln/domain";
import { num, type SqlPool } from "../shared/sql-pool.ts";

// Compile-time proof that the CHECK list in prisma/migrations/0002_logs matches the domain union.
type Exact<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const stateListMatches: Exact<LogState, "open" | "sealed" | "truncated" | "gapped"> = true;
const streamListMatches: Exact<LogStream, "stdout" | "stderr"> = true;
void stateListMatches;
void streamListMatches;

export interface LogHead {
  attemptId: string;
  epoch: number;
  state: LogState;
  nextSeq: number;
  bytes: Record<LogStream, number>;
  dropped: Record<LogStream, number>;
  archivedSeq: number;
  /** Retention (issue 21): the log's class and expiry once archiving stamped them, and when it was evicted. */
  retentionClass: string | null;
  expiresAt: Date | null;
  expiredAt: Date | null;
}

interface HeadRow extends Record<string, unknown> {
  attempt_id: string;
  epoch: number;
  attempt_status: string;
  state: LogState | null;
  next_seq: number | null;
  stdout_bytes: string | null;
  stderr_bytes: string | null;
  stdout_dropped: string | null;
  stderr_dropped: string | null;
  archived_seq: number | null;
  retention_class: string | null;
  expires_at: Date | null;
  expired_at: Date | null;
}

/** The log of attempt `epoch` of `jobId`, or null when that attempt does not exist. */
export async function loadLogHead(pool: SqlPool, jobId: string, epoch: number): Promise<LogHead | null> {
  const { rows } = await pool.query<HeadRow>({
    name: "log-head",
    text: `SELECT a.id AS attempt_id, a.epoch, a.status AS attempt_status, l.state, l.next_seq, l.stdout_bytes, l.stderr_bytes,
                  l.stdout_dropped, l.stderr_dropped, l.archived_seq, l.retention_class, l.expires_at, l.expired_at
           FROM attempt a LEFT JOIN log_attempt l ON l.attempt_id = a.id
           WHERE a.job_id = $1 AND a.epoch = $2`,
    values: [jobId, epoch],
  });
  const r = rows[0];
  if (!r) return null;
  // No log row: nothing was ever ingested. Every ending writes one (sealed or gapped), so a
  // finished attempt without a row predates the log pipeline; it is reported as gapped.
  const state: LogState = r.state ?? (r.attempt_status === "running" ? "open" : "gapped");
  return {
    attemptId: r.attempt_id,
    epoch: r.epoch,
    state,
    nextSeq: r.next_seq ?? 0,
    bytes: { stdout: num(r.stdout_bytes ?? 0), stderr: num(r.stderr_bytes ?? 0) },
    dropped: { stdout: num(r.stdout_dropped ?? 0), stderr: num(r.stderr_dropped ?? 0) },
    archivedSeq: r.archived_seq ?? 0,
    retentionClass: r.retention_class,
    expiresAt: r.expires_at,
    expiredAt: r.expired_at,
  };
}

/**
 * Shares head reads between the followers of one process: 200 viewers polling one job cost one
 * query per interval, not 200. `fresh` (after a detected hole) skips settled cached values but
 * still joins a read that is in flight, so 200 viewers seeing the same hole cost one query too.
 */
export class LogHeadCache {
  private readonly entries = new Map<string, { at: number; settled: boolean; value: Promise<LogHead | null> }>();

  constructor(
    private readonly pool: SqlPool,
    private readonly maxAgeMs: number,
  ) {}

  get(jobId: string, epoch: number, fresh = false): Promise<LogHead | null> {
    const key = `${jobId}/${epoch}`;
    const now = Date.now();
    const hit = this.entries.get(key);
    if (hit && (!hit.settled || (!fresh && now - hit.at < this.maxAgeMs))) return hit.value;
    if (this.entries.size > 1000) {
      for (const [k, e] of this.entries) if (e.settled && now - e.at >= this.maxAgeMs) this.entries.delete(k);
    }
    const entry = { at: now, settled: false, value: loadLogHead(this.pool, jobId, epoch) };
    entry.value.then(
      () => (entry.settled = true),
      () => this.entries.delete(key),
    );
    this.entries.set(key, entry);
    return entry.value;
  }
}

/** Reading an evicted log answers 410 LOG.EXPIRED, like an expired artifact's download. */
export function assertLogRetained(head: LogHead): void {
  if (head.expiredAt)
    throw new DomainError(
      "LOG.EXPIRED",
      `this log expired under retention (${head.retentionClass ?? "unclassified"})`,
      {
        expired_at: head.expiredAt.toISOString(),
      },
    );
}
