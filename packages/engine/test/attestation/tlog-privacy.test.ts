// Issue 28 (A), from the attacker's side: an anonymous reader walks the whole public log (every
// entry and every tile, as GET /v1/tlog/entries/{i} and /tlog/tile/... serve them) and must find
// none of a private repo's text; the org's auditor, holding the bundle, still verifies inclusion.
import { randomBytes } from "node:crypto";
import { tlog } from "@kiln/domain";
import { describe, expect, it } from "vitest";
import { attestJob } from "../../src/attestation/attest-job.ts";
import { listAttestationKeys } from "../../src/attestation/attestation-keys.ts";
import { attestationBundleForLogIndex, setProvenanceVisibility } from "../../src/attestation/provenance-access.ts";
import { getProvenanceRecord } from "../../src/attestation/provenance-record.ts";
import { PUBLICLY_WITHHELD_KINDS } from "../../src/attestation/tlog-commitment.ts";
import { engineTlog } from "../../src/attestation/tlog-adapter.ts";
import { verifyAttestation } from "../../src/attestation/verify-attestation.ts";
import { verifyOffline } from "../../src/attestation/verify-offline.ts";
import { logVerifierKey } from "../../src/attestation/tlog/tlog-key.ts";
import { appendTlogEntry, getTlogEntry, readTile, tlogSize } from "../../src/attestation/tlog/tlog-store.ts";
import { completeAttempt } from "../../src/attempts/complete-attempt.ts";
import { bytes, claim, claimsOf, PRODUCER_CONSUMER, publish, sha256, useS3 } from "../artifacts/support.ts";
import { useJournalPool } from "../logs/support.ts";
import { def, newSession, seedFrozenRun, seedTenant, TEST_CFG, useTestDb } from "../support.ts";
import { attestorDeps, checkpoint, useSigner } from "./support.ts";
import { withTx, type Db } from "@kiln/db";

const t = useTestDb();
const s3 = useS3();
const pool = useJournalPool(t.url);
const signer = useSigner();

const marker = randomBytes(6).toString("hex");
const CLONE_URL = `https://git.example/acme-${marker}/secret-project-${marker}.git`;
const BRANCH = `refs/heads/feature/hidden-${marker}`;
const INPUT_VALUE = `input-value-${marker}`;

/** Everything an unauthenticated reader can fetch: each entry's bytes and every tile, as text. */
async function walkPublicLog(db: Db): Promise<string> {
  const size = await tlogSize(db);
  const parts: string[] = [];
  for (let i = 0; i < size; i++) parts.push(Buffer.from((await getTlogEntry(db, i)).bytes).toString("latin1"));
  for (let level = 0; level < 3; level++)
    for (let index = 0; ; index++) {
      const width = tlog.tileWidthAt(size, level, index);
      if (width === 0) break;
      const hashes = await readTile(db, { level, index, width });
      parts.push(Buffer.from(hashes ?? []).toString("latin1"));
    }
  for (let index = 0; tlog.tileWidthAt(size, 0, index) > 0; index++) {
    const bundle = await readTile(db, { level: null, index, width: tlog.tileWidthAt(size, 0, index) });
    parts.push(Buffer.from(bundle ?? []).toString("latin1"));
  }
  const text = parts.join("\n");
  // The attacker also decodes every base64 run (a DSSE payload is base64 of the statement).
  const decoded = [...text.matchAll(/[A-Za-z0-9+/]{16,}={0,2}/g)].map((m) =>
    Buffer.from(m[0], "base64").toString("latin1"),
  );
  return [text, ...decoded].join("\n");
}

describe("the public log proves without telling", () => {
  it("an anonymous reader of every entry and tile finds no private repo text; the auditor's bundle verifies", {
    timeout: 120_000,
  }, async () => {
    const tenant = await seedTenant(t.db(), { cloneUrl: CLONE_URL });
    const s = await newSession(t.db(), tenant);
    const runId = await seedFrozenRun(t.db(), tenant, def(PRODUCER_CONSUMER), "trusted", BRANCH);
    await t.db().$executeRaw`UPDATE workflow_run SET inputs = ${JSON.stringify({ target: INPUT_VALUE })}::jsonb
      WHERE id = ${runId}::uuid`;
    const p = (await claim(t.db(), s))!;
    const data = bytes(200_000, 3);
    await publish(t.db(), s3.store(), p, "app", data);
    await completeAttempt(t.db(), TEST_CFG, { ...claimsOf(p), outcome: "success", sandboxDestroyed: true });
    const r = await attestJob(attestorDeps(t.db(), pool(), s3.store(), signer()), { jobId: p.jobId, epoch: 1 });
    if (r.kind !== "attested") throw new Error(`not attested: ${r.kind}`);
    await checkpoint(t.db());

    // The attacker's view: nothing private, in any encoding the statement would carry it in.
    const seen = await walkPublicLog(t.db());
    const secrets = [tenant.slug, tenant.orgId, runId, p.jobId, CLONE_URL, BRANCH, INPUT_VALUE, marker];
    for (const x of secrets) expect(seen, x).not.toContain(x);
    const leaf = Buffer.from((await getTlogEntry(t.db(), Number(r.tlogIndex))).bytes).toString("utf8");
    expect(leaf).toMatch(/^kiln\.dev\/tlog\/dsse-commitment\/v1\n[A-Za-z0-9+/]{43}=\n$/);

    // Not the org's, no token: the same 404 as no attestation at all.
    const other = await seedTenant(t.db());
    for (const orgId of [other.orgId, null])
      await expect(
        attestationBundleForLogIndex(t.db(), engineTlog, { orgId, index: r.tlogIndex }),
      ).rejects.toMatchObject({ code: "ATTESTATION.NOT_FOUND" });

    // The org's auditor gets the bundle with the salt, and verifies offline: signature, leaf, inclusion.
    const bundle = await attestationBundleForLogIndex(t.db(), engineTlog, { orgId: tenant.orgId, index: r.tlogIndex });
    expect(bundle.transparency_log.leaf_salt).toMatch(/^[A-Za-z0-9+/]{43}=$/);
    const keys = (await listAttestationKeys(t.db())).map((k) => ({ keyId: k.key_id, spkiPem: k.spki_pem }));
    const verifierKey = (await logVerifierKey(t.db()))!;
    const check = (b: unknown) =>
      verifyOffline({ fileSha256: sha256(data), bundle: b, keys, logVerifierKey: verifierKey, source: CLONE_URL });
    expect(check(bundle)).toMatchObject({ ok: true, subject: "app", logIndex: String(r.tlogIndex) });
    const statement = JSON.parse(Buffer.from(bundle.bundle.dsseEnvelope.payload, "base64").toString("utf8"));
    // Manual-run inputs are in the statement as a digest only.
    expect(JSON.stringify(statement)).not.toContain(INPUT_VALUE);
    expect(statement.predicate.buildDefinition.externalParameters.inputsDigest).toEqual({
      sha256: sha256(Buffer.from(JSON.stringify({ target: INPUT_VALUE }))),
    });
    // A wrong or missing salt does not lead to the logged leaf.
    const noSalt = structuredClone(bundle);
    noSalt.transparency_log.leaf_salt = null;
    expect(check(noSalt)).toMatchObject({ ok: false, rule: "tlog.leaf_hash" });
    const otherSalt = structuredClone(bundle);
    otherSalt.transparency_log.leaf_salt = Buffer.from(randomBytes(32)).toString("base64");
    expect(check(otherSalt)).toMatchObject({ ok: false, rule: "tlog.leaf_hash" });
    otherSalt.transparency_log.leaf_salt = "short";
    expect(check(otherSalt)).toMatchObject({ ok: false, rule: "tlog.leaf_salt" });

    // The platform's own checks still hold on a commitment leaf: the verifier and the record page.
    expect((await verifyAttestation({ db: t.db(), store: s3.store(), tlog: engineTlog }, r.attestationId)).kind).toBe(
      "verified",
    );
    const rec = await getProvenanceRecord(t.db(), engineTlog, { orgId: tenant.orgId, attestationId: r.attestationId });
    expect(rec.log).toMatchObject({ leaf_matches: true, checkpoint_verified: true, inclusion_verified: true });

    // A repo its admins mark public: anyone gets the envelope; marked private again, nobody else.
    const fullName = `${tenant.slug}/app`;
    await setProvenanceVisibility(t.db(), { orgId: tenant.orgId, repo: { fullName }, public: true, actor: "cli:test" });
    const anon = await attestationBundleForLogIndex(t.db(), engineTlog, { orgId: null, index: r.tlogIndex });
    expect(check(anon)).toMatchObject({ ok: true });
    await expect(
      setProvenanceVisibility(t.db(), { orgId: other.orgId, repo: { fullName }, public: false, actor: "cli:test" }),
    ).rejects.toMatchObject({ code: "REPO.NOT_FOUND" });
    await setProvenanceVisibility(t.db(), {
      orgId: tenant.orgId,
      repo: { fullName },
      public: false,
      actor: "cli:test",
    });
    await expect(
      attestationBundleForLogIndex(t.db(), engineTlog, { orgId: null, index: r.tlogIndex }),
    ).rejects.toMatchObject({ code: "ATTESTATION.NOT_FOUND" });
    const audit = await t.db().$queryRaw<{ n: number }[]>`
      SELECT count(*)::int AS n FROM audit_event WHERE kind = 'repo.provenance_visibility_changed' AND org_id = ${tenant.orgId}::uuid`;
    expect(audit[0]!.n).toBe(2);

    // The salt is as immutable as the envelope it commits to.
    await expect(
      t.db().$executeRaw`UPDATE attestation SET tlog_salt = ${randomBytes(32)} WHERE id = ${r.attestationId}::uuid`,
    ).rejects.toThrow(/immutable/);
  });

  it("withholds the bytes of envelopes logged in full before issue 28 from the public entry bundles", async () => {
    const before = await tlogSize(t.db());
    const legacy = await withTx(t.db(), "t", (tx) =>
      appendTlogEntry(tx, { kind: "dsse", bytes: new TextEncoder().encode('{"payload":"old"}'), dedupeKey: "legacy" }),
    );
    expect(legacy.index).toBe(before);
    const size = before + 1;
    await expect(
      readTile(
        t.db(),
        { level: null, index: 0, width: tlog.tileWidthAt(size, 0, 0) },
        {
          withheldKinds: PUBLICLY_WITHHELD_KINDS,
        },
      ),
    ).rejects.toMatchObject({ code: "TLOG.ENTRY_WITHHELD" });
    // Its leaf hash stays in the hash tiles, so proofs over it still verify.
    expect(await readTile(t.db(), { level: 0, index: 0, width: tlog.tileWidthAt(size, 0, 0) })).toHaveLength(32 * size);
  });
});
