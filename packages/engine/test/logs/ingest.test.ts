import { describe, expect, it } from "vitest";
import { appendLogChunks } from "../../src/logs/append-log-chunks.ts";
import { sealLog } from "../../src/logs/seal-log.ts";
import { loadLogHead } from "../../src/logs/log-head.ts";
import { completeAttempt } from "../../src/attempts/complete-attempt.ts";
import { reconcile } from "../../src/attempts/reconcile.ts";
import { TEST_CFG, useTestDb } from "../support.ts";
import {
  ChunkCutter,
  claimedAttempt,
  domainCode,
  expireLease,
  LOG_CFG,
  reclaim,
  sha256,
  useJournalPool,
} from "./support.ts";

const t = useTestDb();
const pool = useJournalPool(t.url);
const none = { stdout: 0, stderr: 0 };

async function journal(attemptId: string): Promise<{ seq: number; stream: string; data: Buffer }[]> {
  const r = await pool().query<{ seq: number; stream: string; data: Buffer }>(
    "SELECT seq, stream, data FROM log_chunk WHERE attempt_id = $1 ORDER BY seq",
    [attemptId],
  );
  return r.rows;
}

describe("log ingest", () => {
  it("acknowledges contiguous chunks with the committed offset per stream", async () => {
    const a = await claimedAttempt(t.db());
    const cut = new ChunkCutter();
    const r = await appendLogChunks(pool(), LOG_CFG, a.writer, [
      cut.cut("stdout", "hello "),
      cut.cut("stderr", "warn\n"),
      cut.cut("stdout", "world\n"),
    ]);
    expect(r).toMatchObject({
      stored: 3,
      duplicates: 0,
      position: { nextSeq: 3, committed: { stdout: 12, stderr: 5 } },
    });
    expect((await journal(a.attemptId)).map((c) => c.data.toString())).toEqual(["hello ", "warn\n", "world\n"]);
  });

  it("accepts an identical retry idempotently, even racing the original", async () => {
    const a = await claimedAttempt(t.db());
    const cut = new ChunkCutter();
    const batch = [cut.cut("stdout", "a".repeat(1000)), cut.cut("stdout", "b".repeat(1000))];
    const [x, y] = await Promise.all([
      appendLogChunks(pool(), LOG_CFG, a.writer, batch),
      appendLogChunks(pool(), LOG_CFG, a.writer, batch),
    ]);
    expect([x.stored, y.stored].sort()).toEqual([0, 2]);
    expect([x.duplicates, y.duplicates].sort()).toEqual([0, 2]);
    const again = await appendLogChunks(pool(), LOG_CFG, a.writer, [batch[1]!, cut.cut("stderr", "c")]);
    expect(again).toMatchObject({
      stored: 1,
      duplicates: 1,
      position: { nextSeq: 3, committed: { stdout: 2000, stderr: 1 } },
    });
    expect(await journal(a.attemptId)).toHaveLength(3);
  });

  it("refuses conflicting bytes for a committed position (409 LOG.CONFLICT) and stores nothing of that batch", async () => {
    const a = await claimedAttempt(t.db());
    const cut = new ChunkCutter();
    const first = cut.cut("stdout", "original");
    await appendLogChunks(pool(), LOG_CFG, a.writer, [first]);
    const forged = Buffer.from("tampered");
    const conflict = { ...first, data: forged, sha256: sha256(forged) };
    const next = cut.cut("stdout", "more");
    expect(await domainCode(appendLogChunks(pool(), LOG_CFG, a.writer, [conflict, next]))).toBe("LOG.CONFLICT");
    // Same sequence number at another offset is a conflict too; a hole is out of order.
    expect(await domainCode(appendLogChunks(pool(), LOG_CFG, a.writer, [{ ...next, offset: 3 }]))).toBe("LOG.CONFLICT");
    expect(await domainCode(appendLogChunks(pool(), LOG_CFG, a.writer, [{ ...next, seq: 5 }]))).toBe(
      "LOG.OUT_OF_ORDER",
    );
    expect((await journal(a.attemptId)).map((c) => c.data.toString())).toEqual(["original"]);
  });

  it("verifies each chunk's length and digest against its bytes", async () => {
    const a = await claimedAttempt(t.db());
    const c = new ChunkCutter().cut("stdout", "data");
    expect(await domainCode(appendLogChunks(pool(), LOG_CFG, a.writer, [{ ...c, sha256: "0".repeat(64) }]))).toBe(
      "REQUEST.INVALID",
    );
    expect(await domainCode(appendLogChunks(pool(), LOG_CFG, a.writer, [{ ...c, length: 5 }]))).toBe("REQUEST.INVALID");
  });

  it("refuses a fenced epoch's chunks; its log is gapped with the acknowledged bytes intact", async () => {
    const a = await claimedAttempt(t.db());
    const cut = new ChunkCutter();
    await appendLogChunks(pool(), LOG_CFG, a.writer, [cut.cut("stdout", "before the freeze\n")]);
    await expireLease(t.db(), a.attemptId);
    // Lease expired but not yet fenced: already refused.
    expect(await domainCode(appendLogChunks(pool(), LOG_CFG, a.writer, [cut.cut("stdout", "late\n")]))).toBe(
      "ATTEMPT.LEASE_EXPIRED",
    );
    await reconcile(t.db(), TEST_CFG);
    const b = await reclaim(t.db(), a);
    expect(b.epoch).toBe(2);
    const zombie = new ChunkCutter();
    zombie.cut("stdout", "before the freeze\n");
    expect(
      await domainCode(appendLogChunks(pool(), LOG_CFG, a.writer, [zombie.cut("stdout", "zombie output\n")])),
    ).toBe("ATTEMPT.STALE_EPOCH");
    // The zombie cannot use its token for the new epoch either.
    expect(
      await domainCode(
        appendLogChunks(pool(), LOG_CFG, { ...b.writer, epoch: 1 }, [new ChunkCutter().cut("stdout", "x")]),
      ),
    ).toBe("ATTEMPT.STALE_EPOCH");
    expect(await loadLogHead(pool(), a.jobId, 1)).toMatchObject({
      state: "gapped",
      nextSeq: 1,
      bytes: { stdout: 18, stderr: 0 },
    });
    expect((await journal(a.attemptId)).map((c) => c.data.toString())).toEqual(["before the freeze\n"]);
    const events = await t.db().$queryRaw<{ to_state: string; reason: string }[]>`
      SELECT to_state, reason FROM transition_event WHERE attempt_id = ${a.attemptId}::uuid AND entity = 'log'`;
    expect(events).toEqual([{ to_state: "gapped", reason: "attempt_ended_unsealed" }]);
    // The new epoch writes its own log from offset 0.
    await appendLogChunks(pool(), LOG_CFG, b.writer, [new ChunkCutter().cut("stdout", "retry\n")]);
    expect(await loadLogHead(pool(), a.jobId, 2)).toMatchObject({ state: "open", nextSeq: 1 });
  });

  it("seals only a complete log, answers a repeated seal the same way, and takes nothing after", async () => {
    const a = await claimedAttempt(t.db());
    const cut = new ChunkCutter();
    await appendLogChunks(pool(), LOG_CFG, a.writer, [cut.cut("stdout", "one\n"), cut.cut("stderr", "two\n")]);
    const missing = { nextSeq: 3, bytes: { stdout: 8, stderr: 4 }, dropped: none };
    expect(await domainCode(sealLog(t.db(), a.writer, missing))).toBe("LOG.INCOMPLETE");
    const declared = { nextSeq: cut.nextSeq, bytes: cut.bytes, dropped: none };
    expect(await sealLog(t.db(), a.writer, declared)).toEqual({ state: "sealed" });
    expect(await sealLog(t.db(), a.writer, declared)).toEqual({ state: "sealed" });
    expect(await domainCode(appendLogChunks(pool(), LOG_CFG, a.writer, [cut.cut("stdout", "after\n")]))).toBe(
      "LOG.ENDED",
    );
    await completeAttempt(t.db(), TEST_CFG, {
      attemptId: a.attemptId,
      jobId: a.jobId,
      epoch: a.epoch,
      outcome: "success",
      sandboxDestroyed: true,
    });
    expect(await loadLogHead(pool(), a.jobId, 1)).toMatchObject({
      state: "sealed",
      nextSeq: 2,
      bytes: { stdout: 4, stderr: 4 },
    });
  });

  it("records truncation: the seal carries the dropped byte counts and the log ends truncated", async () => {
    const a = await claimedAttempt(t.db());
    const cut = new ChunkCutter();
    await appendLogChunks(pool(), LOG_CFG, a.writer, [cut.cut("stdout", "kept")]);
    expect(
      await sealLog(t.db(), a.writer, { nextSeq: 1, bytes: cut.bytes, dropped: { stdout: 123_456, stderr: 7 } }),
    ).toEqual({ state: "truncated" });
    expect(await loadLogHead(pool(), a.jobId, 1)).toMatchObject({
      state: "truncated",
      dropped: { stdout: 123_456, stderr: 7 },
    });
  });

  it("a completion without a seal leaves a gapped log, never a complete one", async () => {
    const a = await claimedAttempt(t.db());
    await appendLogChunks(pool(), LOG_CFG, a.writer, [new ChunkCutter().cut("stdout", "partial")]);
    await completeAttempt(t.db(), TEST_CFG, {
      attemptId: a.attemptId,
      jobId: a.jobId,
      epoch: a.epoch,
      outcome: "success",
      sandboxDestroyed: true,
    });
    expect(await loadLogHead(pool(), a.jobId, 1)).toMatchObject({ state: "gapped", nextSeq: 1 });
    // An attempt that never wrote anything and never sealed is gapped too (there is a row for it).
    const b = await claimedAttempt(t.db());
    await completeAttempt(t.db(), TEST_CFG, {
      attemptId: b.attemptId,
      jobId: b.jobId,
      epoch: b.epoch,
      outcome: "user_failure",
      sandboxDestroyed: true,
    });
    expect(await loadLogHead(pool(), b.jobId, 1)).toMatchObject({ state: "gapped", nextSeq: 0 });
  });

  it("enforces the per-attempt size limit server-side as well", async () => {
    const a = await claimedAttempt(t.db());
    const cut = new ChunkCutter();
    const cfg = { ...LOG_CFG, maxBytesPerAttempt: 10 };
    await appendLogChunks(pool(), cfg, a.writer, [cut.cut("stdout", "12345")]);
    expect(await domainCode(appendLogChunks(pool(), cfg, a.writer, [cut.cut("stderr", "123456")]))).toBe(
      "LOG.LIMIT_EXCEEDED",
    );
  });

  it("pushes back with 503 LOG.JOURNAL_FULL + retry-after when the journal budget is spent, evicting nothing", async () => {
    const a = await claimedAttempt(t.db());
    const used = await pool().query<{ n: string | null }>(
      "SELECT sum(journal_bytes) AS n FROM log_attempt WHERE journal_bytes > 0",
    );
    const cfg = { ...LOG_CFG, journalMaxBytes: Number(used.rows[0]?.n ?? 0) + 10 };
    const cut = new ChunkCutter();
    await appendLogChunks(pool(), cfg, a.writer, [cut.cut("stdout", "0123456789ab")]);
    await new Promise((r) => setTimeout(r, 300)); // the budget read is cached for 250 ms
    const err = await appendLogChunks(pool(), cfg, a.writer, [cut.cut("stdout", "more")]).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: "LOG.JOURNAL_FULL", details: { retry_after_seconds: expect.any(Number) } });
    expect((await journal(a.attemptId)).map((c) => c.data.toString())).toEqual(["0123456789ab"]);
  });
});
