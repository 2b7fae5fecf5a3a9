import { describe, expect, it } from "vitest";
import { appendLogChunks, sealLog } from "@kiln/engine";
import { ChunkCutter, claimedAttempt, LOG_CFG, useJournalPool, useLogStore, useTestDb } from "@kiln/engine/testing";
import { runLogArchive } from "./archive-logs.job.ts";

// Run-it-twice (conventions rule 9): the second pass finds nothing to do and changes nothing.
const t = useTestDb();
const pool = useJournalPool(t.url);
const s3 = useLogStore();

describe("archive-logs job", () => {
  it("archives every ended log once; running it again is a no-op", async () => {
    const logs: string[] = [];
    for (let i = 0; i < 3; i++) {
      const a = await claimedAttempt(t.db());
      const cut = new ChunkCutter();
      const chunks = Array.from({ length: 12 }, (_, j) =>
        cut.cut(j % 2 ? "stderr" : "stdout", Buffer.alloc(10_000, 97 + i)),
      );
      await appendLogChunks(pool(), LOG_CFG, a.writer, chunks);
      await sealLog(t.db(), a.writer, { nextSeq: cut.nextSeq, bytes: cut.bytes, dropped: { stdout: 0, stderr: 0 } });
      logs.push(a.attemptId);
    }
    const rt = { pool: pool(), store: s3.store(), cfg: LOG_CFG };
    const first = await runLogArchive(rt);
    expect(first.indexed).toBeGreaterThanOrEqual(3);
    const snapshot = async () =>
      (
        await pool().query(
          "SELECT attempt_id, from_seq, to_seq, object_key, sha256 FROM log_segment WHERE attempt_id = ANY($1::uuid[]) ORDER BY attempt_id, from_seq",
          [logs],
        )
      ).rows;
    const before = await snapshot();
    const second = await runLogArchive(rt);
    expect(second).toEqual({ attempts: 0, segments: 0, bytes: 0, indexed: 0 });
    expect(await snapshot()).toEqual(before);
    const left = await pool().query<{ n: string }>(
      "SELECT count(*) AS n FROM log_chunk WHERE attempt_id = ANY($1::uuid[])",
      [logs],
    );
    expect(left.rows[0]?.n).toBe("0");
  });
});
