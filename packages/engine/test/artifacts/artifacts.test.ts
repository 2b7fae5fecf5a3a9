import { PutObjectCommand } from "@aws-sdk/client-s3";
import { describe, expect, it } from "vitest";
import { completeAttempt } from "../../src/attempts/complete-attempt.ts";
import { heartbeat } from "../../src/attempts/heartbeat.ts";
import { reconcile } from "../../src/attempts/reconcile.ts";
import { openUpload } from "../../src/artifacts/open-upload.ts";
import { recordPart } from "../../src/artifacts/record-part.ts";
import { finalizeUpload } from "../../src/artifacts/finalize-upload.ts";
import { grantDownload } from "../../src/artifacts/grant-download.ts";
import { jobArtifactDownload, listJobArtifacts } from "../../src/artifacts/job-artifacts.ts";
import { completeMultipartUpload } from "../../src/artifacts/store-ops.ts";
import { def, newSession, runStatus, seedFrozenRun, seedTenant, TEST_CFG, useTestDb } from "../support.ts";
import {
  bytes,
  claim,
  claimsOf,
  expireLease,
  fetchBytes,
  md5Of,
  MiB,
  partBytes,
  PRODUCER_CONSUMER,
  publish,
  putPart,
  sha256,
  uploadParts,
  useS3,
} from "./support.ts";

const t = useTestDb();
const s3 = useS3();

const done = (tk: { attemptId: string; jobId: string; epoch: number }, cfg = TEST_CFG) =>
  completeAttempt(t.db(), cfg, {
    attemptId: tk.attemptId,
    jobId: tk.jobId,
    epoch: tk.epoch,
    outcome: "success",
    sandboxDestroyed: true,
  });

async function generation(id: string) {
  const r = await t.db().$queryRaw<{ state: string; sealed_at: Date | null; epoch: number }[]>`
    SELECT state, sealed_at, epoch FROM artifact_generation WHERE id = ${id}::uuid`;
  return r[0];
}

describe("publish, bind, restore", () => {
  it("seals a multi-part upload, binds it at completion and serves it to the consumer and the API", async () => {
    const tenant = await seedTenant(t.db());
    const s = await newSession(t.db(), tenant);
    const runId = await seedFrozenRun(t.db(), tenant, def(PRODUCER_CONSUMER));
    const producer = (await claim(t.db(), s))!;
    const data = bytes(12 * MiB + 123, 1);
    const genId = await publish(t.db(), s3.store(), producer, "app", data);
    expect(await generation(genId)).toMatchObject({ state: "sealed", epoch: 1 });
    const parts = await t.db().$queryRaw<{ part_number: number; size_bytes: bigint; sha256: string; etag: string }[]>`
      SELECT part_number, size_bytes, sha256, etag FROM artifact_part WHERE generation_id = ${genId}::uuid ORDER BY part_number`;
    expect(parts.map((p) => [p.part_number, Number(p.size_bytes)])).toEqual([
      [1, 5 * MiB],
      [2, 5 * MiB],
      [3, 2 * MiB + 123],
    ]);
    expect(parts.every((p) => /^[0-9a-f]{64}$/.test(p.sha256) && p.etag.length > 0)).toBe(true);

    // Sealed is not bound: nobody can download it before the completion transaction.
    expect(await listJobArtifacts(t.db(), { orgId: tenant.orgId, jobId: producer.jobId })).toEqual([]);
    await done(producer);
    expect(await listJobArtifacts(t.db(), { orgId: tenant.orgId, jobId: producer.jobId })).toEqual([
      {
        id: genId,
        name: "app",
        size: data.length,
        sha256: sha256(data),
        attempt_epoch: 1,
        // Bound, not yet signed: the attestor runs from the outbox (issue 17).
        attestation_state: "pending",
        quarantine_reason: null,
        // Written at seal time (issue 21): the run is on the default branch.
        retention_class: "default_branch",
        expires_at: expect.any(String),
        expired_at: null,
      },
    ]);

    const consumer = (await claim(t.db(), s))!;
    expect(consumer.job.name).toBe("test");
    const grant = await grantDownload(t.db(), s3.store(), claimsOf(consumer), { fromJob: "compile", name: "app" });
    expect(grant).toMatchObject({
      generationId: genId,
      producerEpoch: 1,
      sizeBytes: data.length,
      sha256: sha256(data),
      format: "file",
    });
    expect(sha256(await fetchBytes(grant.url))).toBe(sha256(data));
    await expect(
      grantDownload(t.db(), s3.store(), claimsOf(consumer), { fromJob: "compile", name: "other" }),
    ).rejects.toMatchObject({ code: "ARTIFACT.NOT_DECLARED" });

    const byName = await jobArtifactDownload(t.db(), s3.store(), {
      orgId: tenant.orgId,
      jobId: producer.jobId,
      name: "app",
    });
    expect(byName.kind).toBe("redirect");
    expect(sha256(await fetchBytes(byName.kind === "redirect" ? byName.url : ""))).toBe(sha256(data));
    // Another org sees neither the job nor the artifact.
    const other = await seedTenant(t.db());
    await expect(listJobArtifacts(t.db(), { orgId: other.orgId, jobId: producer.jobId })).rejects.toMatchObject({
      code: "JOB.NOT_FOUND",
    });
    await expect(
      jobArtifactDownload(t.db(), s3.store(), { orgId: other.orgId, jobId: producer.jobId, name: "app" }),
    ).rejects.toMatchObject({ code: "ARTIFACT.NOT_FOUND" });
    await done(consumer);
    expect(await runStatus(t.db(), runId)).toMatchObject({ status: "completed", outcome: "success" });
  });

  it("refuses undeclared artifact names and oversized artifacts", async () => {
    const tenant = await seedTenant(t.db());
    const s = await newSession(t.db(), tenant);
    await seedFrozenRun(t.db(), tenant, def(PRODUCER_CONSUMER));
    const p = (await claim(t.db(), s))!;
    await expect(
      openUpload(t.db(), s3.store(), claimsOf(p), {
        name: "nope",
        sizeBytes: 1,
        sha256: "a".repeat(64),
        format: "file",
      }),
    ).rejects.toMatchObject({ code: "ARTIFACT.NOT_DECLARED" });
    await expect(
      openUpload(t.db(), s3.store(), claimsOf(p), {
        name: "app",
        sizeBytes: 21 * 1024 * MiB,
        sha256: "a".repeat(64),
        format: "file",
      }),
    ).rejects.toMatchObject({ code: "ARTIFACT.TOO_LARGE" });
  });
});

describe("the seed's headline: a silent uploader, a replacement, and a late success", () => {
  it("refuses attempt 1's late upload and success; the consumer gets attempt 2's bytes", async () => {
    const tenant = await seedTenant(t.db());
    const [s1, s2] = [await newSession(t.db(), tenant, 5, "agent-a"), await newSession(t.db(), tenant, 5, "agent-b")];
    const runId = await seedFrozenRun(t.db(), tenant, def(PRODUCER_CONSUMER));
    const first = (await claim(t.db(), s1))!;
    // Two builds of the "same" JAR differ (timestamps, nondeterminism): that is what makes mixing them wrong.
    const jar1 = bytes(11 * MiB, 101);
    const jar2 = bytes(11 * MiB + 7, 202);
    const s1Session = await openUpload(t.db(), s3.store(), claimsOf(first), {
      name: "app",
      sizeBytes: jar1.length,
      sha256: sha256(jar1),
      format: "file",
    });
    await uploadParts(t.db(), first, s1Session, jar1, [1]); // half the artifact, then silence

    await expireLease(t.db(), first.attemptId);
    expect((await reconcile(t.db(), TEST_CFG)).fenced).toBe(1);
    const second = (await claim(t.db(), s2))!;
    expect(second.epoch).toBe(2);
    // The replacement starts a fresh generation under a fresh key; nothing of attempt 1 is reused.
    const s2Session = await openUpload(t.db(), s3.store(), claimsOf(second), {
      name: "app",
      sizeBytes: jar2.length,
      sha256: sha256(jar2),
      format: "file",
    });
    expect(s2Session.generationId).not.toBe(s1Session.generationId);
    expect(s2Session.parts.every((p) => !p.done && p.url)).toBe(true);
    await uploadParts(t.db(), second, s2Session, jar2);
    await finalizeUpload(t.db(), s3.store(), claimsOf(second), s2Session.generationId);
    await heartbeat(t.db(), TEST_CFG, { ...claimsOf(second) });
    await done(second);

    // Attempt 1 wakes up: its presigned URLs still accept bytes (they cannot be revoked) ...
    for (const n of [2, 3]) await putPart(s1Session.parts[n - 1]!.url!, partBytes(jar1, s1Session, n));
    // ... but every metadata step is refused, so those bytes can never become visible.
    const late = partBytes(jar1, s1Session, 2);
    await expect(
      recordPart(t.db(), claimsOf(first), s1Session.generationId, {
        partNumber: 2,
        sizeBytes: late.length,
        sha256: sha256(late),
        etag: "x",
        tries: 1,
      }),
    ).rejects.toMatchObject({ code: "ATTEMPT.STALE_EPOCH" });
    await expect(finalizeUpload(t.db(), s3.store(), claimsOf(first), s1Session.generationId)).rejects.toMatchObject({
      code: "ATTEMPT.STALE_EPOCH",
    });
    await expect(done(first)).rejects.toMatchObject({ code: "ATTEMPT.STALE_EPOCH" });
    expect((await generation(s1Session.generationId))?.state).toBe("uploading");
    const bound = await t.db().$queryRaw<
      { generation_id: string }[]
    >`SELECT generation_id FROM artifact_binding WHERE run_id = ${runId}::uuid`;
    expect(bound).toEqual([{ generation_id: s2Session.generationId }]);

    const consumer = (await claim(t.db(), s1))!;
    const grant = await grantDownload(t.db(), s3.store(), claimsOf(consumer), { fromJob: "compile", name: "app" });
    expect(grant.producerEpoch).toBe(2);
    const got = await fetchBytes(grant.url);
    expect(sha256(got)).toBe(grant.sha256);
    expect(sha256(got)).toBe(sha256(jar2));
  });
});

describe("parts", () => {
  it("accepts a retried part with identical bytes, refuses different bytes, and seals the right object", async () => {
    const tenant = await seedTenant(t.db());
    const s = await newSession(t.db(), tenant);
    await seedFrozenRun(t.db(), tenant, def(PRODUCER_CONSUMER));
    const p = (await claim(t.db(), s))!;
    const data = bytes(10 * MiB + 5, 7);
    const session = await openUpload(t.db(), s3.store(), claimsOf(p), {
      name: "app",
      sizeBytes: data.length,
      sha256: sha256(data),
      format: "file",
    });
    await uploadParts(t.db(), p, session, data);
    // Part 2 again, same bytes (the agent lost the answer and retried): accepted as a retry.
    const part2 = partBytes(data, session, 2);
    const etag = await putPart(session.parts[1]!.url!, part2);
    const again = await recordPart(t.db(), claimsOf(p), session.generationId, {
      partNumber: 2,
      sizeBytes: part2.length,
      sha256: sha256(part2),
      etag,
      tries: 2,
    });
    expect(again).toEqual({ retry: true });
    const row = await t.db().$queryRaw<
      { tries: number }[]
    >`SELECT tries FROM artifact_part WHERE generation_id = ${session.generationId}::uuid AND part_number = 2`;
    expect(row[0]?.tries).toBe(3);
    // Different bytes under the same part number are never accepted.
    const forged = Buffer.from(part2);
    forged[0] = (forged[0] ?? 0) ^ 0xff;
    await expect(
      recordPart(t.db(), claimsOf(p), session.generationId, {
        partNumber: 2,
        sizeBytes: forged.length,
        sha256: sha256(forged),
        etag: "e",
        tries: 1,
      }),
    ).rejects.toMatchObject({ code: "ARTIFACT.PART_CONFLICT" });
    await expect(
      recordPart(t.db(), claimsOf(p), session.generationId, {
        partNumber: 3,
        sizeBytes: 1,
        sha256: sha256(forged),
        etag: "e",
        tries: 1,
      }),
    ).rejects.toMatchObject({ code: "ARTIFACT.PART_CONFLICT" });
    // Resuming the same session hands back the recorded parts and no URLs for them.
    const resumed = await openUpload(t.db(), s3.store(), claimsOf(p), {
      name: "app",
      sizeBytes: data.length,
      sha256: sha256(data),
      format: "file",
    });
    expect(resumed.generationId).toBe(session.generationId);
    expect(resumed.parts.every((x) => x.done && !x.url)).toBe(true);
    // Resuming with other bytes is refused: old parts are never combined with a new suffix.
    await expect(
      openUpload(t.db(), s3.store(), claimsOf(p), {
        name: "app",
        sizeBytes: data.length,
        sha256: sha256(forged),
        format: "file",
      }),
    ).rejects.toMatchObject({ code: "ARTIFACT.SESSION_CONFLICT" });
    const sealed = await finalizeUpload(t.db(), s3.store(), claimsOf(p), session.generationId);
    expect(sealed.sha256).toBe(sha256(data));
  });

  it("will not complete while parts are missing", async () => {
    const tenant = await seedTenant(t.db());
    const s = await newSession(t.db(), tenant);
    await seedFrozenRun(t.db(), tenant, def(PRODUCER_CONSUMER));
    const p = (await claim(t.db(), s))!;
    const data = bytes(6 * MiB, 9);
    const session = await openUpload(t.db(), s3.store(), claimsOf(p), {
      name: "app",
      sizeBytes: data.length,
      sha256: sha256(data),
      format: "file",
    });
    await uploadParts(t.db(), p, session, data, [1]);
    await expect(finalizeUpload(t.db(), s3.store(), claimsOf(p), session.generationId)).rejects.toMatchObject({
      code: "ARTIFACT.PARTS_INCOMPLETE",
    });
  });
});

const TWO_OUTPUTS = PRODUCER_CONSUMER.replace(
  "          path: target/app.jar",
  "          path: target/app.jar\n        - name: lib\n          path: target/lib.jar",
);

async function verifiedBy(generationId: string): Promise<string | null> {
  const r = await t.db().$queryRaw<{ v: string | null }[]>`
    SELECT data->>'verified_by' AS v FROM transition_event WHERE entity = 'artifact' AND to_state = 'sealed' AND data->>'generation_id' = ${generationId}`;
  return r[0]?.v ?? null;
}

describe("verification", () => {
  it("seals on the store's multipart ETag when the agent reported each part's MD5, and reads back without them", async () => {
    const tenant = await seedTenant(t.db());
    const s = await newSession(t.db(), tenant);
    await seedFrozenRun(t.db(), tenant, def(TWO_OUTPUTS));
    const p = (await claim(t.db(), s))!;
    const data = bytes(11 * MiB + 3, 31);
    const session = await openUpload(t.db(), s3.store(), claimsOf(p), {
      name: "app",
      sizeBytes: data.length,
      sha256: sha256(data),
      format: "file",
    });
    expect(session.parts.length).toBeGreaterThan(1);
    await uploadParts(t.db(), p, session, data, undefined, (_n, body) => md5Of(body));
    const sealed = await finalizeUpload(t.db(), s3.store(), claimsOf(p), session.generationId);
    expect(sealed).toMatchObject({ sizeBytes: data.length, sha256: sha256(data) });
    expect(await verifiedBy(session.generationId)).toBe("store_part_md5s");

    // Same upload without part MD5s (an agent from before them): verified by reading it back.
    const other = await openUpload(t.db(), s3.store(), claimsOf(p), {
      name: "lib",
      sizeBytes: data.length,
      sha256: sha256(data),
      format: "file",
    });
    await uploadParts(t.db(), p, other, data);
    await finalizeUpload(t.db(), s3.store(), claimsOf(p), other.generationId);
    expect(await verifiedBy(other.generationId)).toBe("read_back");
  });

  it("reads the object back when a reported part MD5 disagrees with the store, and seals only what hashes right", async () => {
    const tenant = await seedTenant(t.db());
    const s = await newSession(t.db(), tenant);
    await seedFrozenRun(t.db(), tenant, def(TWO_OUTPUTS));
    const p = (await claim(t.db(), s))!;
    const data = bytes(7 * MiB, 32);
    // An agent bug: part 2's reported MD5 is not its bytes'. The composite cannot match, so the
    // finaliser does not take the store's word and hashes the object itself (here: correct bytes).
    const good = await openUpload(t.db(), s3.store(), claimsOf(p), {
      name: "app",
      sizeBytes: data.length,
      sha256: sha256(data),
      format: "file",
    });
    await uploadParts(t.db(), p, good, data, undefined, (n, body) => (n === 2 ? "0".repeat(32) : md5Of(body)));
    await finalizeUpload(t.db(), s3.store(), claimsOf(p), good.generationId);
    expect(await verifiedBy(good.generationId)).toBe("read_back");
    // The declared SHA-256 is wrong and the MD5s are not all there: the read-back refuses to seal.
    const bad = await openUpload(t.db(), s3.store(), claimsOf(p), {
      name: "lib",
      sizeBytes: data.length,
      sha256: "1".repeat(64),
      format: "file",
    });
    await uploadParts(t.db(), p, bad, data, undefined, (n, body) => (n === 1 ? null : md5Of(body)));
    await expect(finalizeUpload(t.db(), s3.store(), claimsOf(p), bad.generationId)).rejects.toMatchObject({
      code: "ARTIFACT.VERIFICATION_FAILED",
    });
    expect((await generation(bad.generationId))?.state).toBe("abandoned");
  });

  it("on the store-digest path trusts the agent's whole-file SHA-256, and the consumer's own check is what refuses a wrong one", async () => {
    // The part MD5s prove the store holds the bytes the agent sent; that those bytes hash to the
    // declared SHA-256 is the agent's word (its freeze hash, guarded by the spool's identity; ADR
    // 0007). Pinned here: such a seal happens, and the bytes served never match the bound digest,
    // so a consumer (which hashes before any step sees a byte) fails with artifact.digest_mismatch.
    const tenant = await seedTenant(t.db());
    const s = await newSession(t.db(), tenant);
    await seedFrozenRun(t.db(), tenant, def(PRODUCER_CONSUMER));
    const p = (await claim(t.db(), s))!;
    const data = bytes(6 * MiB, 33);
    const lying = "2".repeat(64);
    const session = await openUpload(t.db(), s3.store(), claimsOf(p), {
      name: "app",
      sizeBytes: data.length,
      sha256: lying,
      format: "file",
    });
    await uploadParts(t.db(), p, session, data, undefined, (_n, body) => md5Of(body));
    await finalizeUpload(t.db(), s3.store(), claimsOf(p), session.generationId);
    expect(await verifiedBy(session.generationId)).toBe("store_part_md5s");
    expect(await done(p)).toEqual({ accepted: true, jobOutcome: "success" });
    const c = (await claim(t.db(), s))!;
    const grant = await grantDownload(t.db(), s3.store(), claimsOf(c), { fromJob: "compile", name: "app" });
    expect(grant.sha256).toBe(lying);
    expect(sha256(await fetchBytes(grant.url))).not.toBe(grant.sha256);
  });

  it("never seals bytes the store holds differently from what was declared", async () => {
    const tenant = await seedTenant(t.db());
    const s = await newSession(t.db(), tenant);
    const runId = await seedFrozenRun(t.db(), tenant, def(PRODUCER_CONSUMER));
    const p = (await claim(t.db(), s))!;
    const data = bytes(7 * MiB, 11);
    const session = await openUpload(t.db(), s3.store(), claimsOf(p), {
      name: "app",
      sizeBytes: data.length,
      sha256: sha256(data),
      format: "file",
    });
    await uploadParts(t.db(), p, session, data);
    // The part is silently replaced in the store after it was recorded.
    const tampered = Buffer.from(partBytes(data, session, 2));
    tampered[10] = (tampered[10] ?? 0) ^ 1;
    await putPart(session.parts[1]!.url!, tampered);
    await expect(finalizeUpload(t.db(), s3.store(), claimsOf(p), session.generationId)).rejects.toMatchObject({
      code: "ARTIFACT.VERIFICATION_FAILED",
    });
    expect((await generation(session.generationId))?.state).toBe("abandoned");
    // The store itself refused to assemble the recorded ETags (S3's InvalidPart).
    const why = await t.db().$queryRaw<{ e: string | null }[]>`
      SELECT data->>'store_error' AS e FROM transition_event WHERE entity = 'artifact' AND to_state = 'abandoned' AND data->>'generation_id' = ${session.generationId}`;
    expect(why[0]?.e).toBe("InvalidPart");
    // Success without the sealed artifact is not success: retried as a platform failure.
    expect(await done(p)).toEqual({ accepted: true, jobOutcome: "retry_scheduled" });
    const a = await t.db().$queryRaw<
      { outcome: string; cause: string }[]
    >`SELECT outcome, cause FROM attempt WHERE id = ${p.attemptId}::uuid`;
    expect(a[0]).toEqual({ outcome: "platform_failure", cause: "artifact.required_missing" });
    expect((await runStatus(t.db(), runId)).status).toBe("running");
  });

  it("gives the consumer the bound digest, so bytes tampered with after binding are detectable", async () => {
    const tenant = await seedTenant(t.db());
    const s = await newSession(t.db(), tenant);
    await seedFrozenRun(t.db(), tenant, def(PRODUCER_CONSUMER));
    const p = (await claim(t.db(), s))!;
    const data = bytes(1 * MiB, 12);
    const genId = await publish(t.db(), s3.store(), p, "app", data);
    await done(p);
    const key = (
      await t.db().$queryRaw<
        { object_key: string }[]
      >`SELECT object_key FROM artifact_generation WHERE id = ${genId}::uuid`
    )[0]!.object_key;
    await s3.store().s3.send(new PutObjectCommand({ Bucket: "kiln", Key: key, Body: bytes(1 * MiB, 13) }));
    const c = (await claim(t.db(), s))!;
    const grant = await grantDownload(t.db(), s3.store(), claimsOf(c), { fromJob: "compile", name: "app" });
    expect(grant.sha256).toBe(sha256(data));
    expect(sha256(await fetchBytes(grant.url))).not.toBe(grant.sha256);
  });
});

describe("the finaliser", () => {
  it("seals once when the completion response is lost and the agent asks again", async () => {
    const tenant = await seedTenant(t.db());
    const s = await newSession(t.db(), tenant);
    await seedFrozenRun(t.db(), tenant, def(PRODUCER_CONSUMER));
    const p = (await claim(t.db(), s))!;
    const data = bytes(6 * MiB, 21);
    const session = await openUpload(t.db(), s3.store(), claimsOf(p), {
      name: "app",
      sizeBytes: data.length,
      sha256: sha256(data),
      format: "file",
    });
    await uploadParts(t.db(), p, session, data);
    const [a, b] = await Promise.all([
      finalizeUpload(t.db(), s3.store(), claimsOf(p), session.generationId),
      finalizeUpload(t.db(), s3.store(), claimsOf(p), session.generationId).catch((e: unknown) => e),
    ]);
    expect(a.sha256).toBe(sha256(data));
    const first = await generation(session.generationId);
    const c = await finalizeUpload(t.db(), s3.store(), claimsOf(p), session.generationId);
    expect(c).toEqual(a);
    expect(await generation(session.generationId)).toEqual(first);
    void b;
    const sealedEvents = await t.db().$queryRaw<{ n: bigint }[]>`
      SELECT count(*) AS n FROM transition_event WHERE entity = 'artifact' AND to_state = 'sealed' AND data->>'generation_id' = ${session.generationId}`;
    expect(sealedEvents[0]?.n).toBe(1n);
  });

  it("repairs a completion that reached the store but whose answer never came back", async () => {
    const tenant = await seedTenant(t.db());
    const s = await newSession(t.db(), tenant);
    await seedFrozenRun(t.db(), tenant, def(PRODUCER_CONSUMER));
    const p = (await claim(t.db(), s))!;
    const data = bytes(6 * MiB + 1, 22);
    const session = await openUpload(t.db(), s3.store(), claimsOf(p), {
      name: "app",
      sizeBytes: data.length,
      sha256: sha256(data),
      format: "file",
    });
    await uploadParts(t.db(), p, session, data, undefined, (_n, body) => md5Of(body));
    const g = (
      await t.db().$queryRaw<
        { object_key: string; upload_id: string }[]
      >`SELECT object_key, upload_id FROM artifact_generation WHERE id = ${session.generationId}::uuid`
    )[0]!;
    const parts = await t.db().$queryRaw<
      { part_number: number; etag: string }[]
    >`SELECT part_number, etag FROM artifact_part WHERE generation_id = ${session.generationId}::uuid ORDER BY part_number`;
    // The store completed the upload; the control plane died before recording or sealing anything.
    await completeMultipartUpload(
      s3.store(),
      g.object_key,
      g.upload_id,
      parts.map((x) => ({ partNumber: x.part_number, etag: x.etag })),
    );
    expect((await generation(session.generationId))?.state).toBe("uploading");
    const sealed = await finalizeUpload(t.db(), s3.store(), claimsOf(p), session.generationId);
    expect(sealed).toMatchObject({ generationId: session.generationId, sha256: sha256(data) });
    expect((await generation(session.generationId))?.state).toBe("sealed");
    // The store's multipart ETag vouches even when the completion happened before this finaliser.
    expect(await verifiedBy(session.generationId)).toBe("store_part_md5s");
    expect(await done(p)).toEqual({ accepted: true, jobOutcome: "success" });
  });
});

describe("required artifacts", () => {
  it("a job whose declared artifact was never sealed does not succeed", async () => {
    const tenant = await seedTenant(t.db());
    const s = await newSession(t.db(), tenant);
    const runId = await seedFrozenRun(t.db(), tenant, def(PRODUCER_CONSUMER));
    const causes: string[] = [];
    for (let i = 0; i < 3; i++) {
      const p = (await claim(t.db(), s))!;
      expect(p.job.name).toBe("compile");
      await done(p);
      const a = await t.db().$queryRaw<{ cause: string }[]>`SELECT cause FROM attempt WHERE id = ${p.attemptId}::uuid`;
      causes.push(a[0]!.cause);
    }
    expect(causes).toEqual(["artifact.required_missing", "artifact.required_missing", "artifact.required_missing"]);
    expect(await runStatus(t.db(), runId)).toMatchObject({
      status: "completed",
      outcome: "platform_failure",
      cause: "artifact.required_missing",
    });
    const bindings = await t.db().$queryRaw<
      { n: bigint }[]
    >`SELECT count(*) AS n FROM artifact_binding WHERE run_id = ${runId}::uuid`;
    expect(bindings[0]?.n).toBe(0n);
  });

  it("the database refuses a binding to an unsealed generation", async () => {
    const tenant = await seedTenant(t.db());
    const s = await newSession(t.db(), tenant);
    const runId = await seedFrozenRun(t.db(), tenant, def(PRODUCER_CONSUMER));
    const p = (await claim(t.db(), s))!;
    const data = bytes(1024, 3);
    const session = await openUpload(t.db(), s3.store(), claimsOf(p), {
      name: "app",
      sizeBytes: data.length,
      sha256: sha256(data),
      format: "file",
    });
    await expect(t.db().$executeRaw`
      INSERT INTO artifact_binding (run_id, job_id, name, generation_id) VALUES (${runId}::uuid, ${p.jobId}::uuid, 'app', ${session.generationId}::uuid)`).rejects.toThrow();
  });
});
