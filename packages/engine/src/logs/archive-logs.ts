// The archiver: moves committed chunks from the journal into immutable, compressed segments in
// object storage, and only after the object is stored (Content-MD5 verified) deletes the journal
// rows, in the same transaction that records the segment. Ended logs also get an index.json.
// Idempotent: segment boundaries are a function of the journal's prefix, keys are derived from
// them, and a per-attempt lease plus the archived_seq guard make a second run a no-op.
import { DEFAULT_RETENTION_WINDOWS, type LogStream } from "@kiln/domain";
import type { LogConfig } from "./log-config.ts";
import type { LogObjectStore } from "./log-object-store.ts";
import {
  attemptPrefix,
  encodeSegment,
  segmentKey,
  sha256Hex,
  type LogChunkRecord,
  type SegmentEntry,
} from "./log-segments.ts";
import { withTx } from "@kiln/db";
import { num, type SqlPool } from "../shared/sql-pool.ts";
import { loadRunRetention, pgRows, stampFor } from "../shared/retention-stamp.ts";
import type { SegmentSealer } from "../shredding/index.ts";

export interface ArchiveReport {
  attempts: number;
  segments: number;
  bytes: number;
  indexed: number;
}

interface Owner extends Record<string, unknown> {
  attempt_id: string;
  org_id: string;
  run_id: string;
  job_id: string;
  epoch: number;
}

export async function archiveLogs(
  pool: SqlPool,
  store: LogObjectStore,
  cfg: LogConfig,
  opts: { limit?: number; concurrency?: number; shred?: SegmentSealer } = {},
): Promise<ArchiveReport> {
  const report: ArchiveReport = { attempts: 0, segments: 0, bytes: 0, indexed: 0 };
  const { rows } = await pool.query<{ attempt_id: string }>(
    `SELECT attempt_id FROM log_attempt
     WHERE ((journal_bytes > 0 AND (state <> 'open' OR journal_bytes >= $1)) OR (state <> 'open' AND index_key IS NULL))
       AND (archive_lease_until IS NULL OR archive_lease_until < now())
       AND expired_at IS NULL -- evicted by retention (issue 21): nothing left to archive or index
     ORDER BY ended_at NULLS LAST LIMIT $2`,
    [cfg.segmentTargetBytes, opts.limit ?? 50],
  );
  const failures: unknown[] = [];
  // Several logs at once: one segment is a journal read, a gzip (libuv's pool) and a PUT, each
  // mostly waiting on another process, so one log at a time left the cores idle while 8 busy jobs
  // out-wrote it (docs/benchmarks.md "Live logs"). Each log is still archived by one owner, in order.
  const queue = rows.map((r) => r.attempt_id);
  const lane = async (): Promise<void> => {
    for (let attemptId = queue.shift(); attemptId !== undefined; attemptId = queue.shift()) {
      // Every failure stays inside its lane (claim and lease release included), so no lane is left
      // running after the pass has returned; one bad attempt (or a store or database outage) must
      // not starve the others, and the job still fails and retries.
      try {
        const owner = await claim(pool, attemptId, cfg.archiveLeaseMs);
        if (!owner) continue; // another archiver has it
        report.attempts++;
        try {
          await archiveAttempt(pool, store, cfg, owner, report, opts.shred);
        } finally {
          await pool.query("UPDATE log_attempt SET archive_lease_until = NULL WHERE attempt_id = $1", [attemptId]);
        }
      } catch (e) {
        failures.push(e);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(opts.concurrency ?? 1, queue.length)) }, lane));
  if (failures.length === 1) throw failures[0];
  if (failures.length > 1)
    throw new AggregateError(failures, `archiving failed for ${failures.length} logs: ${String(failures[0])}`);
  return report;
}

async function claim(pool: SqlPool, attemptId: string, leaseMs: number): Promise<Owner | null> {
  const { rows } = await pool.query<Owner>(
    `UPDATE log_attempt SET archive_lease_until = now() + make_interval(secs => $2::double precision / 1000)
     WHERE attempt_id = $1 AND (archive_lease_until IS NULL OR archive_lease_until < now())
     RETURNING attempt_id, org_id, run_id, job_id, epoch`,
    [attemptId, leaseMs],
  );
  return rows[0] ?? null;
}

async function archiveAttempt(
  pool: SqlPool,
  store: LogObjectStore,
  cfg: LogConfig,
  owner: Owner,
  report: ArchiveReport,
  shred?: SegmentSealer,
): Promise<void> {
  const o = { orgId: owner.org_id, runId: owner.run_id, jobId: owner.job_id, epoch: owner.epoch };
  for (;;) {
    const head = await loadArchiveHead(pool, owner.attempt_id);
    const chunks = await readPrefix(pool, owner.attempt_id, head.archivedSeq, cfg.segmentTargetBytes);
    const bytes = chunks.reduce((n, c) => n + c.length, 0);
    // An open log keeps its tail in the journal until a full segment has accumulated.
    if (chunks.length === 0 || (head.state === "open" && bytes < cfg.segmentTargetBytes)) break;
    const first = chunks[0];
    const last = chunks[chunks.length - 1];
    if (!first || !last) break;
    const seg = await encodeSegment(chunks);
    const key = segmentKey(o, first.seq, last.seq);
    if (shred) {
      // Sealed under the org's data key of the day (ADR 0037): the segment's digest and stored size
      // are the ciphertext's, which is what the store holds and the reader checks first.
      const sealed = await shred.seal({ orgId: o.orgId, runId: o.runId }, seg.body);
      seg.body = sealed.body;
      seg.sha256 = sha256Hex(sealed.body);
      await store.put(key, seg.body, "application/octet-stream");
      await shred.record(pool, {
        objectKey: key,
        orgId: o.orgId,
        keyId: sealed.keyId,
        attemptId: owner.attempt_id,
        dueAt: sealed.dueAt,
      });
    } else await store.put(key, seg.body, "application/gzip");
    const moved = await commitSegment(
      pool,
      cfg,
      owner.attempt_id,
      key,
      first.seq,
      last.seq,
      seg.rawBytes,
      seg.body.length,
      seg.sha256,
      seg.entries,
    );
    if (!moved) break; // someone else moved this prefix meanwhile
    report.segments++;
    report.bytes += seg.rawBytes;
  }
  if (await writeIndexIfComplete(pool, store, owner, o)) report.indexed++;
}

async function loadArchiveHead(
  pool: SqlPool,
  attemptId: string,
): Promise<{ state: string; nextSeq: number; archivedSeq: number }> {
  const { rows } = await pool.query<{ state: string; next_seq: number; archived_seq: number }>(
    "SELECT state, next_seq, archived_seq FROM log_attempt WHERE attempt_id = $1",
    [attemptId],
  );
  const r = rows[0];
  if (!r) throw new Error(`log ${attemptId} vanished`);
  return { state: r.state, nextSeq: r.next_seq, archivedSeq: r.archived_seq };
}

/** Consecutive journal chunks from `fromSeq` until `targetBytes` is reached (deterministic cut). */
async function readPrefix(
  pool: SqlPool,
  attemptId: string,
  fromSeq: number,
  targetBytes: number,
): Promise<LogChunkRecord[]> {
  const out: LogChunkRecord[] = [];
  let bytes = 0;
  let next = fromSeq;
  while (bytes < targetBytes) {
    const { rows } = await pool.query<{
      seq: number;
      stream: LogStream;
      byte_offset: string;
      length: number;
      sha256: string;
      data: Buffer;
    }>(
      "SELECT seq, stream, byte_offset, length, sha256, data FROM log_chunk WHERE attempt_id = $1 AND seq >= $2 ORDER BY seq LIMIT 32",
      [attemptId, next],
    );
    if (rows.length === 0) break;
    for (const r of rows) {
      if (r.seq !== next || bytes >= targetBytes) return out;
      out.push({
        seq: r.seq,
        stream: r.stream,
        offset: num(r.byte_offset),
        length: r.length,
        sha256: r.sha256,
        data: r.data,
      });
      bytes += r.length;
      next++;
    }
  }
  return out;
}

async function commitSegment(
  pool: SqlPool,
  cfg: LogConfig,
  attemptId: string,
  key: string,
  fromSeq: number,
  toSeq: number,
  rawBytes: number,
  storedBytes: number,
  sha256: string,
  entries: SegmentEntry[],
): Promise<boolean> {
  return withTx(pool, "archive-log-segment", async (c) => {
    const { rows } = await c.query<{ archived_seq: number; run_id: string; created_at: Date }>(
      "SELECT archived_seq, run_id::text, created_at FROM log_attempt WHERE attempt_id = $1 FOR UPDATE",
      [attemptId],
    );
    const head = rows[0];
    if (head?.archived_seq !== fromSeq) return false;
    // Retention by provenance (docs/adr/0036): the segment's class and expiry are written with it.
    // Every segment of one log shares the log's day (when it opened), so a log expires whole.
    const stamp = stampFor(
      await loadRunRetention(pgRows(c), head.run_id),
      "log",
      head.created_at,
      cfg.retention ?? DEFAULT_RETENTION_WINDOWS,
    );
    await c.query(
      `INSERT INTO log_segment (attempt_id, from_seq, to_seq, object_key, raw_bytes, stored_bytes, sha256, chunks, retention_class, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb, $9, $10) ON CONFLICT DO NOTHING`,
      [
        attemptId,
        fromSeq,
        toSeq,
        key,
        rawBytes,
        storedBytes,
        sha256,
        JSON.stringify(entries),
        stamp.cls,
        stamp.expiresAt,
      ],
    );
    await c.query(
      `UPDATE log_attempt SET retention_class = $2, expires_at = $3 WHERE attempt_id = $1 AND expires_at IS NULL`,
      [attemptId, stamp.cls, stamp.expiresAt],
    );
    const del = await c.query<{ freed: string | null }>(
      "WITH d AS (DELETE FROM log_chunk WHERE attempt_id = $1 AND seq BETWEEN $2 AND $3 RETURNING length) SELECT sum(length) AS freed FROM d",
      [attemptId, fromSeq, toSeq],
    );
    await c.query(
      "UPDATE log_attempt SET archived_seq = $2, journal_bytes = journal_bytes - $3 WHERE attempt_id = $1",
      [attemptId, toSeq + 1, num(del.rows[0]?.freed ?? 0)],
    );
    return true;
  });
}

/** Once an ended log is entirely in object storage, its index.json makes the archive self-describing. */
async function writeIndexIfComplete(
  pool: SqlPool,
  store: LogObjectStore,
  owner: Owner,
  o: { orgId: string; runId: string; jobId: string; epoch: number },
): Promise<boolean> {
  const { rows } = await pool.query<{
    state: string;
    next_seq: number;
    archived_seq: number;
    index_key: string | null;
    stdout_bytes: string;
    stderr_bytes: string;
    stdout_dropped: string;
    stderr_dropped: string;
  }>(
    "SELECT state, next_seq, archived_seq, index_key, stdout_bytes, stderr_bytes, stdout_dropped, stderr_dropped FROM log_attempt WHERE attempt_id = $1",
    [owner.attempt_id],
  );
  const h = rows[0];
  if (!h || h.state === "open" || h.index_key !== null || h.archived_seq !== h.next_seq) return false;
  const segs = await pool.query<{
    object_key: string;
    from_seq: number;
    to_seq: number;
    raw_bytes: string;
    stored_bytes: string;
    sha256: string;
    chunks: SegmentEntry[];
  }>(
    "SELECT object_key, from_seq, to_seq, raw_bytes, stored_bytes, sha256, chunks FROM log_segment WHERE attempt_id = $1 ORDER BY from_seq",
    [owner.attempt_id],
  );
  const index = {
    version: 1,
    attempt_id: owner.attempt_id,
    org_id: o.orgId,
    run_id: o.runId,
    job_id: o.jobId,
    epoch: o.epoch,
    state: h.state,
    next_seq: h.next_seq,
    bytes: { stdout: num(h.stdout_bytes), stderr: num(h.stderr_bytes) },
    dropped_bytes: { stdout: num(h.stdout_dropped), stderr: num(h.stderr_dropped) },
    segments: segs.rows.map((s) => ({
      key: s.object_key,
      from_seq: s.from_seq,
      to_seq: s.to_seq,
      raw_bytes: num(s.raw_bytes),
      stored_bytes: num(s.stored_bytes),
      sha256: s.sha256,
      chunks: s.chunks,
    })),
  };
  const key = `${attemptPrefix(o)}/index.json`;
  await store.put(key, Buffer.from(JSON.stringify(index)), "application/json");
  const u = await pool.query("UPDATE log_attempt SET index_key = $2 WHERE attempt_id = $1 AND index_key IS NULL", [
    owner.attempt_id,
    key,
  ]);
  return (u.rowCount ?? 0) > 0;
}
