import { mkdtempSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { shredDueAt } from "@kiln/domain";
import {
  appendLogChunks,
  createObjectStore,
  DEFAULT_ARTIFACT_SETTINGS,
  generateKekText,
  KekSource,
  PlatformKeyStore,
  sealLog,
  ShredLogCipher,
  type ShredKeyDeps,
} from "@kiln/engine";
import { ChunkCutter, claimedAttempt, LOG_CFG, useJournalPool, useLogStore, useTestDb } from "@kiln/engine/testing";
import { describe, expect, it } from "vitest";
import { runLogArchive } from "./archive-logs.job.ts";
import { runDestroyShredKeys } from "./destroy-shred-keys.job.ts";
import { roundIdOf, runSampleDeletions } from "./sample-deletions.job.ts";

// Run-it-twice (conventions rule 9) for the crypto-shredding jobs (issue 21, ADR 0037): the
// archiver with sealing on, the destroyer and the sampler each change nothing on a second run.
const t = useTestDb();
const pool = useJournalPool(t.url);
const s3 = useLogStore();
const dir = mkdtempSync(path.join(tmpdir(), "kiln-shred-jobs-"));
writeFileSync(path.join(dir, "kek"), generateKekText(), { mode: 0o600 });
const keyDir = path.join(dir, "keys");
const keys = (): ShredKeyDeps => ({
  db: t.db(),
  keks: new KekSource(path.join(dir, "kek")),
  platformKeys: new PlatformKeyStore(keyDir),
});

describe("crypto-shredding jobs", () => {
  it("archive (sealed), destroy and sample each run twice as once", async () => {
    const a = await claimedAttempt(t.db());
    const cut = new ChunkCutter();
    await appendLogChunks(
      pool(),
      LOG_CFG,
      a.writer,
      Array.from({ length: 12 }, () => cut.cut("stdout", Buffer.alloc(10_000, 120))),
    );
    await sealLog(t.db(), a.writer, { nextSeq: cut.nextSeq, bytes: cut.bytes, dropped: { stdout: 0, stderr: 0 } });
    const rt = { pool: pool(), store: s3.store(), cfg: LOG_CFG, shred: new ShredLogCipher(keys()) };
    expect((await runLogArchive(rt)).segments).toBeGreaterThan(0);
    expect(await runLogArchive(rt)).toEqual({ attempts: 0, segments: 0, bytes: 0, indexed: 0 });
    const objects = await t.db().$queryRaw<
      { n: bigint }[]
    >`SELECT count(*) AS n FROM shred_object WHERE subject_id = ${a.attemptId}::uuid`;
    const segs = await pool().query<{ n: string }>("SELECT count(*) AS n FROM log_segment WHERE attempt_id = $1", [
      a.attemptId,
    ]);
    expect(Number(objects[0]?.n)).toBe(Number(segs.rows[0]?.n));

    const [row] = await t.db().$queryRaw<
      { due_day: Date }[]
    >`SELECT due_day FROM shred_data_key WHERE org_id = ${a.tenant.orgId}::uuid`;
    const due = shredDueAt((row?.due_day as Date).toISOString().slice(0, 10));
    const evidence = () =>
      t.db().$queryRaw<
        { key_kind: string; key_id: string }[]
      >`SELECT key_kind, key_id FROM shred_destruction ORDER BY seq`;
    const first = await runDestroyShredKeys(keys(), due);
    expect(first).toEqual({ dataKeys: 1, platformKeys: 1 });
    const after = await evidence();
    expect(await runDestroyShredKeys(keys(), due)).toEqual({ dataKeys: 0, platformKeys: 0 });
    expect(await evidence()).toEqual(after);
    expect(readdirSync(keyDir).filter((f) => f.endsWith(".key"))).toEqual([]);

    const h = s3.s3();
    const rtS = {
      keys: keys(),
      pool: pool(),
      s3: createObjectStore({
        endpoint: h.endpoint,
        region: h.region,
        accessKeyId: h.accessKeyId,
        secretAccessKey: h.secretAccessKey,
      }),
      bucket: h.bucket,
      artifactSettings: DEFAULT_ARTIFACT_SETTINGS,
    };
    const round = roundIdOf("job-1");
    expect(roundIdOf("job-1")).toBe(round);
    const s1 = await runSampleDeletions(rtS, round, 50, due);
    expect(s1.leaks).toBe(0);
    expect(s1.probes).toBe(Number(segs.rows[0]?.n) * 3);
    const samples = () =>
      t.db().$queryRaw<{ n: bigint }[]>`SELECT count(*) AS n FROM shred_sample WHERE round_id = ${round}::uuid`;
    const n1 = Number((await samples())[0]?.n);
    await runSampleDeletions(rtS, round, 50, due); // the same pg-boss job retried
    expect(Number((await samples())[0]?.n)).toBe(n1);
  });
});
