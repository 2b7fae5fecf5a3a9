// Ingest: POST /v1/agent/jobs/{job_id}/logs. Acknowledges only after the chunks are committed in
// PostgreSQL (the durability boundary); answers with the highest contiguous committed offsets.
import { createHash } from "node:crypto";
import {
  decideChunkBatch,
  decideHeartbeat,
  DomainError,
  type LogChunkIdentity,
  type LogPosition,
  type LogState,
  type LogStream,
} from "@kiln/domain";
import type { LogConfig } from "./log-config.ts";
import { journalBytesInUse } from "./journal-budget.ts";
import { withTx } from "@kiln/db";
import { num, type SqlClient, type SqlPool } from "../shared/sql-pool.ts";

export interface IncomingChunk extends LogChunkIdentity {
  data: Buffer;
}

export interface AppendResult {
  position: LogPosition;
  stored: number;
  duplicates: number;
  /** The chunks this call committed (for fan-out after commit). */
  appended: IncomingChunk[];
}

interface LockedLog extends Record<string, unknown> {
  state: LogState;
  next_seq: number;
  stdout_bytes: string;
  stderr_bytes: string;
}

/** The job token's claims: which attempt, at which epoch. */
export interface LogWriter {
  jobId: string;
  attemptId: string;
  epoch: number;
}

export async function appendLogChunks(
  pool: SqlPool,
  cfg: LogConfig,
  writer: LogWriter,
  chunks: IncomingChunk[],
): Promise<AppendResult> {
  for (const c of chunks) verifyChunk(c);
  const inUse = await journalBytesInUse(pool);
  if (inUse >= cfg.journalMaxBytes) {
    // Back-pressure, never eviction: acknowledged bytes stay until the archiver has them.
    throw new DomainError("LOG.JOURNAL_FULL", "the log journal is full until the archiver catches up; retry later", {
      retry_after_seconds: 2,
    });
  }
  return withTx(pool, "append-log-chunks", async (c) => {
    const log = await lockLog(c, writer.attemptId);
    await assertCurrentAttempt(c, writer);
    const position: LogPosition = {
      nextSeq: log.next_seq,
      committed: { stdout: num(log.stdout_bytes), stderr: num(log.stderr_bytes) },
    };
    const stored = await storedIdentities(
      c,
      writer.attemptId,
      chunks.filter((x) => x.seq < position.nextSeq).map((x) => x.seq),
    );
    const decision = decideChunkBatch({
      state: log.state,
      position,
      chunks,
      stored: (seq) => stored.get(seq),
      maxBytes: cfg.maxBytesPerAttempt,
    });
    const bySeq = new Map(chunks.map((x) => [x.seq, x]));
    const appended = decision.append.map((id) => bySeq.get(id.seq)).filter((x): x is IncomingChunk => x !== undefined);
    const added = appended.reduce((n, ch) => n + ch.length, 0);
    if (appended.length > 0) {
      await insertChunks(c, writer.attemptId, appended);
      await c.query({
        name: "log-attempt-advance",
        text: `UPDATE log_attempt SET next_seq = $2, stdout_bytes = $3, stderr_bytes = $4, journal_bytes = journal_bytes + $5 WHERE attempt_id = $1`,
        values: [
          writer.attemptId,
          decision.after.nextSeq,
          decision.after.committed.stdout,
          decision.after.committed.stderr,
          added,
        ],
      });
    }
    return { position: decision.after, stored: appended.length, duplicates: decision.duplicates, appended };
  });
}

/** One multi-row INSERT per batch (payloads go as binary parameters, never as text). */
async function insertChunks(c: SqlClient, attemptId: string, chunks: IncomingChunk[]): Promise<void> {
  const rows: string[] = [];
  const values: unknown[] = [attemptId];
  for (const ch of chunks) {
    const p = values.length + 1;
    rows.push(`($1, $${p}, $${p + 1}, $${p + 2}, $${p + 3}, $${p + 4}, $${p + 5})`);
    values.push(ch.seq, ch.stream, ch.offset, ch.length, ch.sha256, ch.data);
  }
  await c.query(
    `INSERT INTO log_chunk (attempt_id, seq, stream, byte_offset, length, sha256, data) VALUES ${rows.join(", ")}`,
    values,
  );
}

function verifyChunk(c: IncomingChunk): void {
  if (c.data.length !== c.length)
    throw new DomainError("REQUEST.INVALID", `chunk ${c.seq}: length ${c.length} but ${c.data.length} bytes of data`);
  const digest = createHash("sha256").update(c.data).digest("hex");
  if (digest !== c.sha256) throw new DomainError("REQUEST.INVALID", `chunk ${c.seq}: sha256 does not match its data`);
}

/** Locks the attempt's log row, creating it on first use. Every log state change takes this lock. */
async function lockLog(c: SqlClient, attemptId: string): Promise<LockedLog> {
  const q = {
    name: "log-lock",
    text: "SELECT state, next_seq, stdout_bytes, stderr_bytes FROM log_attempt WHERE attempt_id = $1 FOR UPDATE",
    values: [attemptId],
  };
  let rows = (await c.query<LockedLog>(q)).rows;
  if (!rows[0]) {
    await c.query(
      `INSERT INTO log_attempt (attempt_id, job_id, run_id, org_id, epoch)
       SELECT id, job_id, run_id, org_id, epoch FROM attempt WHERE id = $1 ON CONFLICT (attempt_id) DO NOTHING`,
      [attemptId],
    );
    rows = (await c.query<LockedLog>(q)).rows;
  }
  const row = rows[0];
  if (!row) throw new DomainError("ATTEMPT.NOT_FOUND", "unknown attempt");
  return row;
}

/**
 * Only the job's current attempt with a live lease may write (the same rule as heartbeats). Read
 * without locking the attempt: fencing locks the attempt and then this log row, so taking the
 * attempt lock here could deadlock. The log row lock is what orders a chunk against the end of
 * the log, so no chunk can land after a fenced attempt's log was marked gapped.
 */
async function assertCurrentAttempt(c: SqlClient, w: LogWriter): Promise<void> {
  const { rows } = await c.query<{
    job_id: string;
    epoch: number;
    status: "running" | "completed";
    current_epoch: number;
    lease_live: boolean;
  }>({
    name: "log-attempt-live",
    text: `SELECT a.job_id, a.epoch, a.status, j.current_epoch, a.lease_expires_at > now() AS lease_live
           FROM attempt a JOIN job_run j ON j.id = a.job_id WHERE a.id = $1`,
    values: [w.attemptId],
  });
  const a = rows[0];
  if (!a || a.job_id !== w.jobId) throw new DomainError("ATTEMPT.NOT_FOUND", "unknown attempt");
  decideHeartbeat({
    job: { currentEpoch: a.current_epoch },
    attempt: { epoch: a.epoch, status: a.status, leaseLive: a.lease_live },
    reportedEpoch: w.epoch,
  });
}

async function storedIdentities(
  c: SqlClient,
  attemptId: string,
  seqs: number[],
): Promise<Map<number, LogChunkIdentity>> {
  if (seqs.length === 0) return new Map();
  const { rows } = await c.query<{
    seq: number;
    stream: LogStream;
    byte_offset: string;
    length: number;
    sha256: string;
  }>("SELECT seq, stream, byte_offset, length, sha256 FROM log_chunk WHERE attempt_id = $1 AND seq = ANY($2::int[])", [
    attemptId,
    seqs,
  ]);
  return new Map(
    rows.map((r) => [
      r.seq,
      { seq: r.seq, stream: r.stream, offset: num(r.byte_offset), length: r.length, sha256: r.sha256 },
    ]),
  );
}
