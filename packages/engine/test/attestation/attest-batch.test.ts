import { describe, expect, it } from "vitest";
import { attestJobs } from "../../src/attestation/attest-job.ts";
import { commitmentLeaf } from "../../src/attestation/tlog-commitment.ts";
import { engineTlog } from "../../src/attestation/tlog-adapter.ts";
import { tlogSize } from "../../src/attestation/tlog/tlog-store.ts";
import { completeAttempt } from "../../src/attempts/complete-attempt.ts";
import { bytes, claim, claimsOf, PRODUCER_CONSUMER, publish, useS3 } from "../artifacts/support.ts";
import { useJournalPool } from "../logs/support.ts";
import { def, newSession, seedFrozenRun, seedTenant, TEST_CFG, useTestDb } from "../support.ts";
import { attestorDeps, useSigner } from "./support.ts";

// The attestor's batches (ADR 0027 "Batches"): many jobs per transaction and log lock, without
// giving up one leaf per statement under pg-boss's at-least-once delivery, and without one bad
// job failing or blocking the others.
const t = useTestDb();
const s3 = useS3();
const pool = useJournalPool(t.url);
const signer = useSigner();
const deps = () => attestorDeps(t.db(), pool(), s3.store(), signer());

/** A run whose producer published `data` as "app" and succeeded. */
async function producedRun(data: Buffer) {
  const tenant = await seedTenant(t.db());
  const s = await newSession(t.db(), tenant);
  const runId = await seedFrozenRun(t.db(), tenant, def(PRODUCER_CONSUMER));
  const producer = (await claim(t.db(), s))!;
  await publish(t.db(), s3.store(), producer, "app", data);
  await completeAttempt(t.db(), TEST_CFG, { ...claimsOf(producer), outcome: "success", sandboxDestroyed: true });
  return { runId, producer };
}

describe("the attestor's batches (one transaction and one log lock for many jobs)", () => {
  const leavesOf = async (ids: string[]) =>
    t.db().$queryRaw<{ dedupe_key: string; idx: bigint }[]>`
      SELECT dedupe_key, idx FROM tlog_entry WHERE dedupe_key = ANY(${ids}) ORDER BY idx`;
  const rowsOf = async (jobIds: string[]) =>
    t.db().$queryRaw<{ id: string; job_id: string; tlog_index: bigint; envelope: string; tlog_salt: Uint8Array }[]>`
      SELECT id, job_id, tlog_index, envelope, tlog_salt FROM attestation WHERE job_id = ANY(${jobIds}::uuid[])`;

  it("gives each job one row and one leaf under duplicate delivery, concurrent batches and replays", async () => {
    const runs = [];
    for (let i = 0; i < 4; i++) runs.push(await producedRun(bytes(64 * 1024 + i, 30 + i)));
    const refs = runs.map((r) => ({ jobId: r.producer.jobId, epoch: 1 }));
    // pg-boss at-least-once: the same job twice in one fetch, and in two fetches handled at once.
    const [x, y] = await Promise.all([
      attestJobs(deps(), [refs[0]!, refs[1]!, refs[0]!, refs[2]!]),
      attestJobs(deps(), [refs[2]!, refs[3]!, refs[1]!]),
    ]);
    expect(x[0]).toEqual(x[2]);
    const kinds = [...x, ...y].map((r) => r.kind);
    expect(kinds.every((k) => k === "attested" || k === "already")).toBe(true);
    const rows = await rowsOf(refs.map((r) => r.jobId));
    expect(rows).toHaveLength(4);
    const leaves = await leavesOf(rows.map((r) => r.id));
    expect(leaves.map((l) => l.dedupe_key).sort()).toEqual(rows.map((r) => r.id).sort());
    for (const r of rows) {
      expect(leaves.find((l) => l.dedupe_key === r.id)?.idx).toBe(r.tlog_index);
      // The leaf is the salted commitment to this row's envelope (issue 28), never the envelope.
      const leaf = (await engineTlog.entry(t.db(), r.tlog_index))!;
      expect(leaf).toEqual(commitmentLeaf(new Uint8Array(r.tlog_salt), new TextEncoder().encode(r.envelope)));
    }
    // Each job's outcome names its own row, whichever batch wrote it.
    for (const [i, ref] of [refs[0]!, refs[1]!, refs[0]!, refs[2]!].entries()) {
      const o = x[i]!;
      expect(o.kind === "attested" || o.kind === "already" ? o.attestationId : null).toBe(
        rows.find((r) => r.job_id === ref.jobId)?.id,
      );
    }
    const again = await attestJobs(deps(), refs);
    expect(again.map((r) => r.kind)).toEqual(["already", "already", "already", "already"]);
    expect(await leavesOf(rows.map((r) => r.id))).toEqual(leaves);
  });

  it("logs a fixed-size commitment however large the statement: 70 KB of inputs are attested", async () => {
    const good1 = await producedRun(bytes(1000, 41));
    const big = await producedRun(bytes(1000, 42));
    const good2 = await producedRun(bytes(1000, 43));
    // Before issue 28 the leaf was the envelope, and this run's was above the log's 65535 bytes; the
    // leaf is now a commitment and the statement names the inputs' digest only.
    await t.db().$executeRaw`
      UPDATE workflow_run SET inputs = jsonb_build_object('blob', repeat('x', 70000)) WHERE id = ${big.runId}::uuid`;
    const refs = [good1, big, good2].map((r) => ({ jobId: r.producer.jobId, epoch: 1 }));
    const out = await attestJobs(deps(), refs);
    expect(out.map((r) => r.kind)).toEqual(["attested", "attested", "attested"]);
    const rows = await rowsOf([big.producer.jobId]);
    expect(rows[0]!.envelope.length).toBeLessThan(10_000);
    expect((await engineTlog.entry(t.db(), rows[0]!.tlog_index))!.length).toBeLessThan(100);
  });

  it("retries job by job when the database refuses one row: only that job fails, the log stays dense", async () => {
    const runs = [];
    for (let i = 0; i < 3; i++) runs.push(await producedRun(bytes(2000 + i, 50 + i)));
    const refs = runs.map((r) => ({ jobId: r.producer.jobId, epoch: 1 }));
    const victim = refs[1]!.jobId;
    // A real refusal from PostgreSQL, for one job only (what a constraint on a bad row would do).
    await t.db().$executeRawUnsafe(`CREATE FUNCTION test_refuse_attestation() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW.job_id = '${victim}'::uuid THEN RAISE EXCEPTION 'refused for this test'; END IF; RETURN NEW; END $$`);
    await t.db().$executeRawUnsafe(`CREATE TRIGGER test_refuse_attestation BEFORE INSERT ON attestation
      FOR EACH ROW EXECUTE FUNCTION test_refuse_attestation()`);
    const sizeBefore = await tlogSize(t.db());
    try {
      const out = await attestJobs(deps(), refs);
      expect(out.map((r) => r.kind)).toEqual(["attested", "failed", "attested"]);
      expect(String((out[1] as { error: Error }).error.message)).toMatch(/refused for this test/);
    } finally {
      await t.db().$executeRawUnsafe(`DROP TRIGGER test_refuse_attestation ON attestation`);
      await t.db().$executeRawUnsafe(`DROP FUNCTION test_refuse_attestation()`);
    }
    // Two leaves, no gap and no leaf for the refused job; its retry (pg-boss) then attests it.
    expect(await tlogSize(t.db())).toBe(sizeBefore + 2);
    const n = await t.db().$queryRaw<
      { n: bigint; top: bigint }[]
    >`SELECT count(*) AS n, max(idx) AS top FROM tlog_entry`;
    expect(Number(n[0]!.top) + 1).toBe(Number(n[0]!.n));
    expect((await attestJobs(deps(), [refs[1]!]))[0]?.kind).toBe("attested");
    expect(await rowsOf(refs.map((r) => r.jobId))).toHaveLength(3);
  });
});
