import { PutObjectCommand } from "@aws-sdk/client-s3";
import { bundleFromJSON } from "@sigstore/bundle";
import { PublicKeyDetails } from "@sigstore/protobuf-specs";
import { toSignedEntity, toTrustMaterial, Verifier } from "@sigstore/verify";
import { createPublicKey } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fromBase64Any, tlog } from "@kiln/domain";
import { describe, expect, it } from "vitest";
import { attestJob } from "../../src/attestation/attest-job.ts";
import { attestationBundleForArtifact, type AttestationBundle } from "../../src/attestation/attestation-bundle.ts";
import { findAttestations } from "../../src/attestation/find-attestations.ts";
import { getProvenanceRecord } from "../../src/attestation/provenance-record.ts";
import { commitmentLeaf } from "../../src/attestation/tlog-commitment.ts";
import { engineTlog } from "../../src/attestation/tlog-adapter.ts";
import { parseOutboxMessage } from "../../src/shared/outbox-topics.ts";
import { verifyAttestation } from "../../src/attestation/verify-attestation.ts";
import { tlogHasher, openCheckpoint } from "../../src/attestation/tlog/tlog-crypto.ts";
import { logVerifierKey } from "../../src/attestation/tlog/tlog-key.ts";
import { completeAttempt } from "../../src/attempts/complete-attempt.ts";
import { reconcile } from "../../src/attempts/reconcile.ts";
import { jobArtifactDownload, listJobArtifacts } from "../../src/artifacts/job-artifacts.ts";
import {
  bytes,
  claim,
  claimsOf,
  expireLease,
  MiB,
  PRODUCER_CONSUMER,
  publish,
  sha256,
  useS3,
} from "../artifacts/support.ts";
import { useJournalPool } from "../logs/support.ts";
import { generateKekText, KekSource } from "../../src/secrets/index.ts";
import { destroyDueKeys, PlatformKeyStore } from "../../src/shredding/index.ts";
import { sealedShreddedArtifact } from "../shredding/support.ts";
import { def, newSession, seedFrozenRun, seedTenant, TEST_CFG, useTestDb } from "../support.ts";
import { attestorDeps, checkpoint, useSigner } from "./support.ts";

const t = useTestDb();
const s3 = useS3();
const pool = useJournalPool(t.url);
const signer = useSigner();
const deps = () => attestorDeps(t.db(), pool(), s3.store(), signer());

const done = (tk: { attemptId: string; jobId: string; epoch: number }) =>
  completeAttempt(t.db(), TEST_CFG, { ...tk, outcome: "success", sandboxDestroyed: true });

/** A run whose producer published `data` as "app" and succeeded; returns its ids. */
async function producedRun(data: Buffer) {
  const tenant = await seedTenant(t.db());
  const s = await newSession(t.db(), tenant);
  const runId = await seedFrozenRun(t.db(), tenant, def(PRODUCER_CONSUMER));
  const producer = (await claim(t.db(), s))!;
  const generationId = await publish(t.db(), s3.store(), producer, "app", data);
  await done(claimsOf(producer));
  return { tenant, session: s, runId, producer, generationId };
}

/** @sigstore/verify with the published key and every threshold at 0 (Kiln's log is not Rekor). */
function sigstoreVerify(b: AttestationBundle["bundle"], keyId: string, spkiPem: string): void {
  const der = createPublicKey(spkiPem).export({ type: "spki", format: "der" });
  const trust = toTrustMaterial(
    {
      mediaType: "application/vnd.dev.sigstore.trustedroot+json;version=0.1",
      tlogs: [],
      certificateAuthorities: [],
      ctlogs: [],
      timestampAuthorities: [],
    },
    {
      [keyId]: {
        rawBytes: der,
        keyDetails: PublicKeyDetails.PKIX_ECDSA_P256_SHA_256,
        validFor: { start: new Date(0) },
      },
    },
  );
  const v = new Verifier(trust, { tlogThreshold: 0, ctlogThreshold: 0, timestampThreshold: 0 });
  v.verify(toSignedEntity(bundleFromJSON(b)));
}

describe("the attestor", () => {
  it("is queued by the completion transaction, writes one statement and one leaf however often it runs", async () => {
    const data = bytes(6 * MiB + 5, 7);
    const { producer, generationId, tenant, runId } = await producedRun(data);
    const outbox = await t.db().$queryRaw<{ payload: { jobId: string; epoch: number } }[]>`
      SELECT payload FROM outbox WHERE topic = 'attestation.create' AND dedupe_key = ${producer.jobId}`;
    expect(outbox.map((o) => o.payload)).toEqual([expect.objectContaining({ jobId: producer.jobId, epoch: 1 })]);

    // Run it twice, and twice at once: one attestation row, one log leaf.
    const [a, b] = await Promise.all([
      attestJob(deps(), { jobId: producer.jobId, epoch: 1 }),
      attestJob(deps(), { jobId: producer.jobId, epoch: 1 }),
    ]);
    const again = await attestJob(deps(), { jobId: producer.jobId, epoch: 1 });
    expect([a.kind, b.kind].sort()).toEqual(["already", "attested"]);
    expect(again.kind).toBe("already");
    const rows = await t.db().$queryRaw<{ id: string; envelope: string; tlog_index: bigint; tlog_salt: Uint8Array }[]>`
      SELECT id, envelope, tlog_index, tlog_salt FROM attestation WHERE job_id = ${producer.jobId}::uuid`;
    expect(rows).toHaveLength(1);
    // The SQL producer's verify row is a registered topic whose payload parses (ADR 0038).
    const verifyRows = await t.db().$queryRaw<{ topic: string; payload: unknown }[]>`
      SELECT topic, payload FROM outbox WHERE dedupe_key = ${rows[0]!.id}`;
    expect(verifyRows.map((v) => parseOutboxMessage(v.topic, v.payload))).toEqual([
      { topic: "attestation.verify", payload: { attestationId: rows[0]!.id } },
    ]);
    const leaves = await t.db().$queryRaw<
      { n: bigint }[]
    >`SELECT count(*) AS n FROM tlog_entry WHERE dedupe_key = ${rows[0]!.id}`;
    expect(Number(leaves[0]?.n)).toBe(1);
    const leaf = await engineTlog.entry(t.db(), rows[0]!.tlog_index);
    // The public leaf commits to the envelope under the row's private salt (issue 28).
    const committed = commitmentLeaf(new Uint8Array(rows[0]!.tlog_salt), new TextEncoder().encode(rows[0]!.envelope));
    expect(leaf).toEqual(committed);

    // The statement: subject = the sealed bytes' sha256; invocation names the job and epoch 1.
    const env = JSON.parse(rows[0]!.envelope) as { payload: string };
    const st = JSON.parse(Buffer.from(fromBase64Any(env.payload)!).toString("utf8"));
    expect(st.subject).toEqual([{ name: "app", digest: { sha256: sha256(data) } }]);
    expect(st.predicate.runDetails.metadata.invocationId).toBe(
      `https://kiln.test/runs/${runId}/jobs/${producer.jobId}/attempts/1`,
    );
    expect(st.predicate.buildDefinition.internalParameters).toMatchObject({
      org: tenant.orgId,
      trustClass: "trusted",
      run: runId,
    });

    // Until a checkpoint covers it the verifier waits; then it verifies.
    expect((await verifyAttestation({ db: t.db(), store: s3.store(), tlog: engineTlog }, rows[0]!.id)).kind).toBe(
      "waiting_for_checkpoint",
    );
    await checkpoint(t.db());
    expect((await verifyAttestation({ db: t.db(), store: s3.store(), tlog: engineTlog }, rows[0]!.id)).kind).toBe(
      "verified",
    );
    expect((await verifyAttestation({ db: t.db(), store: s3.store(), tlog: engineTlog }, rows[0]!.id)).kind).toBe(
      "already",
    );

    // The bundle: @sigstore/verify accepts it with the published key; a tampered payload is refused.
    const bundle = await attestationBundleForArtifact(t.db(), engineTlog, {
      orgId: tenant.orgId,
      artifactId: generationId,
    });
    expect(bundle.bundle.verificationMaterial.publicKey.hint).toBe(signer().keyId);
    sigstoreVerify(bundle.bundle, signer().keyId, signer().spkiPem);
    const forged = structuredClone(bundle.bundle);
    forged.dsseEnvelope.payload = Buffer.from(
      JSON.stringify({ ...st, subject: [{ name: "app", digest: { sha256: "0".repeat(64) } }] }),
    ).toString("base64");
    expect(() => sigstoreVerify(forged, signer().keyId, signer().spkiPem)).toThrow();

    // Its inclusion proof verifies, with the log's own rules, against the checkpoint it names.
    const inc = bundle.transparency_log.inclusion_proof!;
    const opened = openCheckpoint(inc.checkpoint, (await logVerifierKey(t.db()))!);
    expect(opened.ok).toBe(true);
    if (!opened.ok) return;
    const leafHash = tlogHasher.leaf(committed);
    expect(Buffer.from(leafHash).toString("base64")).toBe(bundle.transparency_log.leaf_hash);
    const proof = inc.hashes.map((h) => tlog.fromBase64(h)!);
    expect(
      tlog.verifyInclusion(
        tlogHasher,
        BigInt(inc.log_index),
        opened.checkpoint.size,
        leafHash,
        proof,
        opened.checkpoint.rootHash,
      ).ok,
    ).toBe(true);

    // Search by digest, commit and run, in this org only; the record page re-verifies everything.
    expect(await findAttestations(t.db(), tenant.orgId, { subjectSha256: sha256(data) })).toHaveLength(1);
    expect(await findAttestations(t.db(), tenant.orgId, { commit: "a".repeat(12) })).toHaveLength(1);
    expect(await findAttestations(t.db(), tenant.orgId, { runId })).toHaveLength(1);
    const other = await seedTenant(t.db());
    expect(await findAttestations(t.db(), other.orgId, { subjectSha256: sha256(data) })).toEqual([]);
    await expect(
      attestationBundleForArtifact(t.db(), engineTlog, { orgId: other.orgId, artifactId: generationId }),
    ).rejects.toMatchObject({ code: "ATTESTATION.NOT_FOUND" });
    const rec = await getProvenanceRecord(t.db(), engineTlog, { orgId: tenant.orgId, attestationId: rows[0]!.id });
    expect(rec.signature).toMatchObject({ verified: true, failed_rule: null });
    expect(rec.log).toMatchObject({ leaf_matches: true, checkpoint_verified: true, inclusion_verified: true });
    const list = await listJobArtifacts(t.db(), { orgId: tenant.orgId, jobId: producer.jobId });
    expect(list).toEqual([expect.objectContaining({ id: generationId, attestation_state: "verified" })]);
  });

  it("never attests a stale attempt's output: the winner's epoch and bytes only", async () => {
    const tenant = await seedTenant(t.db());
    const s = await newSession(t.db(), tenant);
    await seedFrozenRun(t.db(), tenant, def(PRODUCER_CONSUMER));
    const first = (await claim(t.db(), s))!;
    const staleBytes = bytes(MiB, 11);
    const staleGen = await publish(t.db(), s3.store(), first, "app", staleBytes);
    await expireLease(t.db(), first.attemptId);
    expect((await reconcile(t.db(), TEST_CFG)).fenced).toBe(1);
    const second = (await claim(t.db(), s))!;
    expect(second.epoch).toBe(2);
    const winBytes = bytes(MiB, 12);
    await publish(t.db(), s3.store(), second, "app", winBytes);
    await done(claimsOf(second));
    // The fenced attempt's report and a job queued with its epoch both come to nothing.
    await expect(done(claimsOf(first))).rejects.toThrow();
    expect(await attestJob(deps(), { jobId: first.jobId, epoch: 1 })).toEqual({ kind: "not_applicable" });
    const r = await attestJob(deps(), { jobId: second.jobId, epoch: 2 });
    expect(r.kind).toBe("attested");
    const subj = await t.db().$queryRaw<{ generation_id: string; sha256: string }[]>`
      SELECT s.generation_id, s.sha256 FROM attestation_subject s JOIN attestation a ON a.id = s.attestation_id WHERE a.job_id = ${second.jobId}::uuid`;
    expect(subj.map((x) => x.sha256)).toEqual([sha256(winBytes)]);
    expect(subj.map((x) => x.generation_id)).not.toContain(staleGen);
    expect(sha256(staleBytes)).not.toBe(sha256(winBytes));
  });

  it("quarantines an artifact whose stored object was tampered with; never deletes it", async () => {
    const data = bytes(MiB + 3, 21);
    const { producer, generationId, tenant } = await producedRun(data);
    const r = await attestJob(deps(), { jobId: producer.jobId, epoch: 1 });
    expect(r.kind).toBe("attested");
    const key = await t.db().$queryRaw<
      { object_key: string }[]
    >`SELECT object_key FROM artifact_generation WHERE id = ${generationId}::uuid`;
    const store = s3.store();
    await store.s3.send(
      new PutObjectCommand({ Bucket: store.bucket, Key: key[0]!.object_key, Body: Buffer.from("evil bytes") }),
    );
    await checkpoint(t.db());
    const v = await verifyAttestation(
      { db: t.db(), store, tlog: engineTlog },
      r.kind === "attested" ? r.attestationId : "",
    );
    expect(v).toMatchObject({ kind: "mismatch", reason: "object.digest_mismatch", quarantined: 1 });
    await expect(
      jobArtifactDownload(t.db(), store, { orgId: tenant.orgId, jobId: producer.jobId, name: "app" }),
    ).rejects.toMatchObject({
      code: "ARTIFACT.QUARANTINED",
    });
    const list = await listJobArtifacts(t.db(), { orgId: tenant.orgId, jobId: producer.jobId });
    expect(list[0]).toMatchObject({ attestation_state: "quarantined", quarantine_reason: "object.digest_mismatch" });
    // The database refuses to lift or delete a quarantine, or to rewrite the signed statement.
    await expect(
      t.db().$executeRaw`DELETE FROM artifact_quarantine WHERE generation_id = ${generationId}::uuid`,
    ).rejects.toThrow(/permanent/);
    await expect(
      t.db().$executeRaw`UPDATE attestation SET envelope = '{}' WHERE job_id = ${producer.jobId}::uuid`,
    ).rejects.toThrow(/immutable/);
    await expect(
      t.db().$executeRaw`UPDATE attestation SET state = 'verified' WHERE job_id = ${producer.jobId}::uuid`,
    ).rejects.toThrow(/immutable/);
    await expect(
      t.db().$executeRaw`UPDATE attestation SET tlog_index = tlog_index + 1000 WHERE job_id = ${producer.jobId}::uuid`,
    ).rejects.toThrow(/immutable/);
    // Nothing commits an attestation without its log entry (the append is the transaction's last write).
    await expect(
      t.db()
        .$executeRaw`INSERT INTO attestation (id, org_id, run_id, job_id, attempt_id, epoch, commit_sha, key_id, envelope)
        SELECT gen_random_uuid(), a.org_id, a.run_id, j.id, a.attempt_id, a.epoch, a.commit_sha, a.key_id, '{}'
        FROM attestation a JOIN job_run j ON j.run_id = a.run_id AND j.id <> a.job_id WHERE a.job_id = ${producer.jobId}::uuid`,
    ).rejects.toThrow(/without a transparency-log index/);
  });

  it("verifies a sealed artifact (ADR 0037) against its plaintext digest, and never quarantines it for its key's death", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "kiln-attest-shred-"));
    writeFileSync(path.join(dir, "kek"), generateKekText(), { mode: 0o600 });
    const keys = { db: t.db(), keks: new KekSource(path.join(dir, "kek")), platformKeys: new PlatformKeyStore(dir) };
    const sealing = { ...s3.store(), shred: keys };
    const tenant = await seedTenant(t.db());
    const data = bytes(MiB + 11, 5);
    const generationId = await sealedShreddedArtifact(t.db(), sealing, tenant, data);
    const [g] = await t.db().$queryRaw<{ job_id: string; shred_due_at: Date }[]>`
      SELECT job_id::text, shred_due_at FROM artifact_generation WHERE id = ${generationId}::uuid`;
    const r = await attestJob(deps(), { jobId: g!.job_id, epoch: 1 });
    expect(r.kind).toBe("attested");
    const id = r.kind === "attested" ? r.attestationId : "";
    await checkpoint(t.db());
    // Without the key store the verifier cannot open it: the job fails (retried), no verdict.
    await expect(verifyAttestation({ db: t.db(), store: s3.store(), tlog: engineTlog }, id)).rejects.toMatchObject({
      code: "SHRED.KEY_UNAVAILABLE",
    });
    expect((await verifyAttestation({ db: t.db(), store: sealing, tlog: engineTlog }, id)).kind).toBe("verified");
    const q = await t.db().$queryRaw<{ n: bigint }[]>`
      SELECT count(*) AS n FROM artifact_quarantine WHERE generation_id = ${generationId}::uuid`;
    expect(Number(q[0]?.n)).toBe(0);

    // A second sealed artifact whose key is destroyed before the verifier gets to it: its bytes are
    // deleted by design, so it is not quarantined as "missing" or "mismatched".
    const tenant2 = await seedTenant(t.db());
    const gen2 = await sealedShreddedArtifact(t.db(), sealing, tenant2, data);
    const [g2] = await t.db().$queryRaw<{ job_id: string; shred_due_at: Date }[]>`
      SELECT job_id::text, shred_due_at FROM artifact_generation WHERE id = ${gen2}::uuid`;
    const r2 = await attestJob(deps(), { jobId: g2!.job_id, epoch: 1 });
    await checkpoint(t.db());
    expect((await destroyDueKeys(keys, g2!.shred_due_at)).dataKeys).toBeGreaterThan(0);
    expect(
      (
        await verifyAttestation(
          { db: t.db(), store: sealing, tlog: engineTlog },
          r2.kind === "attested" ? r2.attestationId : "",
        )
      ).kind,
    ).toBe("verified");
    const q2 = await t.db().$queryRaw<{ n: bigint }[]>`
      SELECT count(*) AS n FROM artifact_quarantine WHERE generation_id = ${gen2}::uuid`;
    expect(Number(q2[0]?.n)).toBe(0);
  });
});
