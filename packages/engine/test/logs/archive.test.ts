import { describe, expect, it } from "vitest";
import { appendLogChunks } from "../../src/logs/append-log-chunks.ts";
import { archiveLogs } from "../../src/logs/archive-logs.ts";
import { loadLogHead } from "../../src/logs/log-head.ts";
import { LogArchiveReader } from "../../src/logs/log-segments.ts";
import { readLogChunks, readStreamBytes } from "../../src/logs/read-log-chunks.ts";
import { sealLog } from "../../src/logs/seal-log.ts";
import { useTestDb } from "../support.ts";
import { ChunkCutter, claimedAttempt, LOG_CFG, useJournalPool, useLogStore, type ClaimedAttempt } from "./support.ts";

const t = useTestDb();
const pool = useJournalPool(t.url);
const s3 = useLogStore();
const none = { stdout: 0, stderr: 0 };

/** ~300 KiB of log in 8 KiB chunks on both streams, sealed. */
async function writeLog(
  a: ClaimedAttempt,
  chunks = 40,
  seal = true,
): Promise<{ stdout: Buffer; stderr: Buffer; cut: ChunkCutter }> {
  const cut = new ChunkCutter();
  const out: Record<"stdout" | "stderr", Buffer[]> = { stdout: [], stderr: [] };
  for (let i = 0; i < chunks; i += 4) {
    const batch = [];
    for (let j = i; j < Math.min(chunks, i + 4); j++) {
      const stream = j % 3 === 2 ? "stderr" : "stdout";
      const data = Buffer.from(`${stream} line ${j} `.repeat(1000).slice(0, 8192));
      out[stream].push(data);
      batch.push(cut.cut(stream, data));
    }
    await appendLogChunks(pool(), LOG_CFG, a.writer, batch);
  }
  if (seal) await sealLog(t.db(), a.writer, { nextSeq: cut.nextSeq, bytes: cut.bytes, dropped: none });
  return { stdout: Buffer.concat(out.stdout), stderr: Buffer.concat(out.stderr), cut };
}

async function readAll(
  reader: LogArchiveReader,
  attemptId: string,
  untilSeq: number,
): Promise<{ seqs: number[]; stdout: Buffer }> {
  const seqs: number[] = [];
  const stdout: Buffer[] = [];
  for (let next = 0; next < untilSeq; ) {
    const chunks = await readLogChunks(pool(), reader, attemptId, next, { untilSeq, maxBytes: 20_000 });
    for (const c of chunks) {
      seqs.push(c.seq);
      if (c.stream === "stdout") stdout.push(c.data);
    }
    next = (chunks[chunks.length - 1]?.seq ?? next) + 1;
  }
  return { seqs, stdout: Buffer.concat(stdout) };
}

async function journalRows(attemptId: string): Promise<number> {
  const r = await pool().query<{ n: string }>("SELECT count(*) AS n FROM log_chunk WHERE attempt_id = $1", [attemptId]);
  return Number(r.rows[0]?.n);
}

describe("log archive", () => {
  it("moves a sealed log into segments + index, frees the journal, and replays it byte for byte; running it twice changes nothing", async () => {
    const a = await claimedAttempt(t.db());
    const want = await writeLog(a);
    const first = await archiveLogs(pool(), s3.store(), LOG_CFG);
    expect(first.segments).toBeGreaterThanOrEqual(4);
    expect(first.indexed).toBeGreaterThanOrEqual(1);
    expect(await journalRows(a.attemptId)).toBe(0);
    const row = await pool().query<{ journal_bytes: string; archived_seq: number; index_key: string }>(
      "SELECT journal_bytes, archived_seq, index_key FROM log_attempt WHERE attempt_id = $1",
      [a.attemptId],
    );
    expect(row.rows[0]).toMatchObject({ journal_bytes: "0", archived_seq: 40 });
    const index = JSON.parse(Buffer.from(await s3.store().get(row.rows[0]!.index_key)).toString()) as {
      state: string;
      next_seq: number;
      segments: { from_seq: number; to_seq: number }[];
    };
    expect(index).toMatchObject({ state: "sealed", next_seq: 40 });
    expect(index.segments[0]?.from_seq).toBe(0);
    expect(index.segments[index.segments.length - 1]?.to_seq).toBe(39);

    const segmentsBefore = await pool().query(
      "SELECT object_key, sha256 FROM log_segment WHERE attempt_id = $1 ORDER BY from_seq",
      [a.attemptId],
    );
    const second = await archiveLogs(pool(), s3.store(), LOG_CFG);
    expect(second).toMatchObject({ segments: 0, indexed: 0 });
    const segmentsAfter = await pool().query(
      "SELECT object_key, sha256 FROM log_segment WHERE attempt_id = $1 ORDER BY from_seq",
      [a.attemptId],
    );
    expect(segmentsAfter.rows).toEqual(segmentsBefore.rows);

    const replay = await readAll(new LogArchiveReader(s3.store()), a.attemptId, 40);
    expect(replay.seqs).toEqual(Array.from({ length: 40 }, (_, i) => i));
    expect(replay.stdout.equals(want.stdout)).toBe(true);
    const head = await loadLogHead(pool(), a.jobId, 1);
    const raw: Buffer[] = [];
    for await (const b of readStreamBytes(
      pool(),
      new LogArchiveReader(s3.store()),
      a.attemptId,
      head!.nextSeq,
      "stderr",
    ))
      raw.push(b);
    expect(Buffer.concat(raw).equals(want.stderr)).toBe(true);
  });

  it("two archivers at once produce the same segments once", async () => {
    const a = await claimedAttempt(t.db());
    const want = await writeLog(a, 24);
    await Promise.all([archiveLogs(pool(), s3.store(), LOG_CFG), archiveLogs(pool(), s3.store(), LOG_CFG)]);
    const segs = await pool().query<{ from_seq: number; to_seq: number }>(
      "SELECT from_seq, to_seq FROM log_segment WHERE attempt_id = $1 ORDER BY from_seq",
      [a.attemptId],
    );
    for (let i = 1; i < segs.rows.length; i++) expect(segs.rows[i]!.from_seq).toBe(segs.rows[i - 1]!.to_seq + 1);
    expect(segs.rows[segs.rows.length - 1]?.to_seq).toBe(23);
    expect((await readAll(new LogArchiveReader(s3.store()), a.attemptId, 24)).stdout.equals(want.stdout)).toBe(true);
  });

  it("archives several logs at once, each whole and in order", async () => {
    const attempts = [
      await claimedAttempt(t.db()),
      await claimedAttempt(t.db()),
      await claimedAttempt(t.db()),
      await claimedAttempt(t.db()),
    ];
    const wants = [];
    for (const a of attempts) wants.push(await writeLog(a, 24));
    const r = await archiveLogs(pool(), s3.store(), LOG_CFG, { concurrency: 3 });
    expect(r.attempts).toBeGreaterThanOrEqual(4);
    for (const [i, a] of attempts.entries()) {
      expect(await journalRows(a.attemptId)).toBe(0);
      const segs = await pool().query<{ from_seq: number; to_seq: number }>(
        "SELECT from_seq, to_seq FROM log_segment WHERE attempt_id = $1 ORDER BY from_seq",
        [a.attemptId],
      );
      expect(segs.rows[0]?.from_seq).toBe(0);
      for (let k = 1; k < segs.rows.length; k++) expect(segs.rows[k]!.from_seq).toBe(segs.rows[k - 1]!.to_seq + 1);
      expect(segs.rows[segs.rows.length - 1]?.to_seq).toBe(23);
      expect((await readAll(new LogArchiveReader(s3.store()), a.attemptId, 24)).stdout.equals(wants[i]!.stdout)).toBe(
        true,
      );
    }
  });

  it("archives full segments of a still-open log and replays seamlessly across archive and journal", async () => {
    const a = await claimedAttempt(t.db());
    const want = await writeLog(a, 20, false);
    await archiveLogs(pool(), s3.store(), LOG_CFG);
    const head = await pool().query<{ archived_seq: number; state: string }>(
      "SELECT archived_seq, state FROM log_attempt WHERE attempt_id = $1",
      [a.attemptId],
    );
    expect(head.rows[0]?.state).toBe("open");
    // 64 KiB segments of 8 KiB chunks: the first 16 chunks moved, the 4-chunk tail stays journaled.
    expect(head.rows[0]?.archived_seq).toBe(16);
    expect(await journalRows(a.attemptId)).toBe(4);
    const replay = await readAll(new LogArchiveReader(s3.store()), a.attemptId, 20);
    expect(replay.seqs).toEqual(Array.from({ length: 20 }, (_, i) => i));
    expect(replay.stdout.equals(want.stdout)).toBe(true);
    // The log keeps growing after a partial archive.
    const more = want.cut.cut("stdout", "tail\n");
    expect((await appendLogChunks(pool(), LOG_CFG, a.writer, [more])).position.nextSeq).toBe(21);
  });

  it("frees journal budget only after the segment is stored, so ingest resumes after archiving", async () => {
    const a = await claimedAttempt(t.db());
    await writeLog(a, 8);
    const before = await pool().query<{ n: string }>(
      "SELECT journal_bytes AS n FROM log_attempt WHERE attempt_id = $1",
      [a.attemptId],
    );
    expect(Number(before.rows[0]?.n)).toBe(8 * 8192);
    const failing = {
      put: async () => {
        throw new Error("store down");
      },
      get: async () => new Uint8Array(),
    };
    await expect(archiveLogs(pool(), failing, LOG_CFG)).rejects.toThrow(/store down/);
    expect(await journalRows(a.attemptId)).toBe(8);
    await archiveLogs(pool(), s3.store(), LOG_CFG);
    const after = await pool().query<{ n: string }>(
      "SELECT journal_bytes AS n FROM log_attempt WHERE attempt_id = $1",
      [a.attemptId],
    );
    expect(Number(after.rows[0]?.n)).toBe(0);
  });
});
