import { PutObjectCommand } from "@aws-sdk/client-s3";
import { completeAttempt, engineTlog } from "@kiln/engine";
import {
  attestorDeps,
  bytes,
  checkpoint,
  claim,
  claimsOf,
  def,
  newSession,
  PRODUCER_CONSUMER,
  publish,
  seedFrozenRun,
  seedTenant,
  TEST_CFG,
  useJournalPool,
  useS3,
  useSigner,
  useTestDb,
} from "@kiln/engine/testing";
import { createLogger } from "@kiln/logger";
import { describe, expect, it } from "vitest";
import { attestJobJob, runAttestJob, runAttestJobs } from "./attest-job.job.ts";
import { runVerifyAttestation, verifyAttestationJob } from "./verify-attestation.job.ts";

// Run-it-twice (conventions rule 9) for both attestation jobs, on real PostgreSQL and s3rver.
const t = useTestDb();
const s3 = useS3();
const pool = useJournalPool(t.url);
const signer = useSigner();
const log = createLogger({ service: "test" }, () => undefined);

async function succeededProducer() {
  const tenant = await seedTenant(t.db());
  const s = await newSession(t.db(), tenant);
  const runId = await seedFrozenRun(t.db(), tenant, def(PRODUCER_CONSUMER));
  const p = (await claim(t.db(), s))!;
  const generationId = await publish(t.db(), s3.store(), p, "app", bytes(1024 * 1024, 5));
  await completeAttempt(t.db(), TEST_CFG, { ...claimsOf(p), outcome: "success", sandboxDestroyed: true });
  return { tenant, runId, p, generationId, payload: { jobId: p.jobId, runId, orgId: tenant.orgId, epoch: p.epoch } };
}

const snapshot = async (jobId: string) =>
  t.db().$queryRaw<{ id: string; tlog_index: bigint; envelope: string; state: string }[]>`
    SELECT id, tlog_index, envelope, state FROM attestation WHERE job_id = ${jobId}::uuid`;

describe("attest-job", () => {
  it("declares its payload and retry policy; a second run changes nothing", async () => {
    const { payload, p } = await succeededProducer();
    expect(attestJobJob.payload.parse(payload)).toEqual(payload);
    const d = attestorDeps(t.db(), pool(), s3.store(), signer());
    await runAttestJob(d, payload, log);
    const first = await snapshot(p.jobId);
    expect(first).toHaveLength(1);
    await runAttestJob(d, payload, log);
    expect(await snapshot(p.jobId)).toEqual(first);
    const leaves = await t.db().$queryRaw<
      { n: bigint }[]
    >`SELECT count(*) AS n FROM tlog_entry WHERE dedupe_key = ${first[0]!.id}`;
    expect(Number(leaves[0]?.n)).toBe(1);
  });
});

describe("attest-job batches", () => {
  it("handles a fetch at once: a job delivered twice, and the whole batch run twice, leave one row and one leaf each", async () => {
    const a = await succeededProducer();
    const b = await succeededProducer();
    const d = attestorDeps(t.db(), pool(), s3.store(), signer());
    expect(attestJobJob.batchSize).toBeGreaterThan(1);
    expect(await runAttestJobs(d, [a.payload, b.payload, a.payload], log)).toEqual([null, null, null]);
    const first = [...(await snapshot(a.p.jobId)), ...(await snapshot(b.p.jobId))];
    expect(first).toHaveLength(2);
    expect(await runAttestJobs(d, [b.payload, a.payload], log)).toEqual([null, null]);
    expect([...(await snapshot(a.p.jobId)), ...(await snapshot(b.p.jobId))]).toEqual(first);
    const leaves = await t.db().$queryRaw<
      { n: bigint }[]
    >`SELECT count(*) AS n FROM tlog_entry WHERE dedupe_key = ANY(${first.map((f) => f.id)})`;
    expect(Number(leaves[0]?.n)).toBe(2);
  });
});

describe("verify-attestation", () => {
  it("waits (retried by pg-boss) until a checkpoint covers the entry; then verifies once", async () => {
    const { payload, p } = await succeededProducer();
    await runAttestJob(attestorDeps(t.db(), pool(), s3.store(), signer()), payload, log);
    const [a] = await snapshot(p.jobId);
    expect(verifyAttestationJob.payload.parse({ attestationId: a!.id })).toEqual({ attestationId: a!.id });
    const d = { db: t.db(), store: s3.store(), tlog: engineTlog };
    await expect(runVerifyAttestation(d, a!.id, log)).rejects.toThrow(/checkpoint/);
    expect((await snapshot(p.jobId))[0]?.state).toBe("logged");
    await checkpoint(t.db());
    await runVerifyAttestation(d, a!.id, log);
    await runVerifyAttestation(d, a!.id, log);
    expect((await snapshot(p.jobId))[0]?.state).toBe("verified");
  });

  it("quarantines a tampered artifact once, however often it runs", async () => {
    const { payload, p, generationId } = await succeededProducer();
    await runAttestJob(attestorDeps(t.db(), pool(), s3.store(), signer()), payload, log);
    const [a] = await snapshot(p.jobId);
    const key = await t.db().$queryRaw<
      { object_key: string }[]
    >`SELECT object_key FROM artifact_generation WHERE id = ${generationId}::uuid`;
    await s3.store().s3.send(new PutObjectCommand({ Bucket: s3.store().bucket, Key: key[0]!.object_key, Body: "x" }));
    await checkpoint(t.db());
    const d = { db: t.db(), store: s3.store(), tlog: engineTlog };
    await runVerifyAttestation(d, a!.id, log);
    await runVerifyAttestation(d, a!.id, log);
    const q = await t.db().$queryRaw<
      { reason: string }[]
    >`SELECT reason FROM artifact_quarantine WHERE generation_id = ${generationId}::uuid`;
    expect(q).toEqual([{ reason: "object.digest_mismatch" }]);
    expect((await snapshot(p.jobId))[0]?.state).toBe("mismatch");
  });
});
