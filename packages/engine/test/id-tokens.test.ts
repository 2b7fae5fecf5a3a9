import { randomBytes, randomUUID } from "node:crypto";
import { mkdtemp, readFile, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { listAuditEvents } from "../src/audit/index.ts";
import { completeAttempt } from "../src/attempts/complete-attempt.ts";
import { reconcile } from "../src/attempts/reconcile.ts";
import { claimJob, type JobTicket } from "../src/dispatch/claim-job.ts";
import { kekFromBytes, loadOrCreateIdentityKek, openPrivateKey } from "../src/identity/identity-kek.ts";
import { idTokenJwks, listIdTokenKeys, rotateIdTokenKey } from "../src/identity/id-token-keys.ts";
import { mintIdToken } from "../src/identity/mint-id-token.ts";
import { setUntrustedIdTokens } from "../src/identity/untrusted-id-tokens.ts";
import { introspectIdToken, verifyIdToken } from "../src/identity/verify-id-token.ts";
import { def, newSession, ONE_JOB, seedFrozenRun, seedTenant, TEST_CFG, useTestDb, type Tenant } from "./support.ts";

// Issue 16 (ADR 0024) against real PostgreSQL: minting is refused for an attempt that is not
// current, lives at most 10 minutes and never past the lease, is recorded by jti; verification
// and introspection go inactive the moment the attempt stops being current; keys rotate with an
// exact overlap and are sealed at rest.
const t = useTestDb();
const ISSUER = "https://kiln.test";
const kek = kekFromBytes(randomBytes(32));
const ctx = { issuer: ISSUER, kek };

async function claimed(
  tenant: Tenant,
  opts: { trust?: string; cfg?: typeof TEST_CFG; ref?: string } = {},
): Promise<JobTicket> {
  await seedFrozenRun(t.db(), tenant, def(ONE_JOB), opts.trust ?? "trusted", opts.ref);
  const session = await newSession(t.db(), tenant, 10, "h", opts.trust === "untrusted" ? "microvm" : "process");
  const r = await claimJob(t.db(), opts.cfg ?? TEST_CFG, { sessionId: session, claimRequestId: randomUUID() });
  if (r.kind !== "claimed") throw new Error(`no claim: ${r.kind}`);
  return r.ticket;
}

const mint = (tk: JobTicket, audience = "sts.example", epoch = tk.epoch) =>
  mintIdToken(t.db(), ctx, { jobId: tk.jobId, attemptId: tk.attemptId, epoch, audience });

describe("minting", () => {
  it("carries the attempt's claims, at most 10 minutes and never past the lease", async () => {
    const tenant = await seedTenant(t.db());
    const tk = await claimed(tenant);
    const m = await mint(tk);
    const c = m.claims;
    expect(c).toMatchObject({
      iss: ISSUER,
      aud: "sts.example",
      sub: `repo:${tenant.repoName}:ref:refs/heads/main`,
      org: tenant.slug,
      repository: tenant.repoName,
      repository_id: tenant.repoId,
      ref: "refs/heads/main",
      sha: "a".repeat(40),
      workflow_path: ".kiln/workflow.yaml",
      run_id: tk.runId,
      job_id: tk.jobId,
      job_name: "build",
      attempt: 1,
      trust_class: "trusted",
      event: "manual",
      isolation: "process",
    });
    expect(c.nbf).toBe(c.iat);
    // TEST_CFG's lease is 60 s: the token ends with it, not 10 minutes later.
    const lease = await t.db().$queryRaw<
      { at: Date }[]
    >`SELECT lease_expires_at AS at FROM attempt WHERE id = ${tk.attemptId}::uuid`;
    expect(c.exp).toBeLessThanOrEqual(Math.floor((lease[0]?.at.getTime() ?? 0) / 1000));
    expect(c.exp - c.iat).toBeGreaterThan(50);
    const row = await t.db().$queryRaw<{ attempt_id: string; epoch: number; expires_at: Date }[]>`
      SELECT attempt_id, epoch, expires_at FROM id_token WHERE jti = ${c.jti}::uuid`;
    expect(row[0]).toMatchObject({ attempt_id: tk.attemptId, epoch: 1 });
    expect(row[0]?.expires_at.getTime()).toBe(c.exp * 1000);
    // The audit record committed with it: facts, never the token.
    const audit = await listAuditEvents(t.db(), { orgSlug: tenant.slug, kind: "id_token.minted" });
    expect(audit).toHaveLength(1);
    expect(audit[0]).toMatchObject({ actor: `agent:${tk.attemptId}`, subject: c.jti });
    expect(audit[0]?.data).toMatchObject({
      jti: c.jti,
      audience: "sts.example",
      epoch: 1,
      trust_class: "trusted",
      exp: c.exp,
    });
    expect(JSON.stringify(audit[0])).not.toContain(m.value.split(".")[2] ?? "-");
  });

  it("caps at 10 minutes under a long lease", async () => {
    const tenant = await seedTenant(t.db());
    const tk = await claimed(tenant, { cfg: { ...TEST_CFG, leaseTtlMs: 3600_000 } });
    const c = (await mint(tk)).claims;
    expect(c.exp - c.iat).toBe(600);
  });

  it("refuses a stale epoch, an ended attempt and a bad audience", async () => {
    const tenant = await seedTenant(t.db());
    const tk = await claimed(tenant);
    await expect(mint(tk, "sts.example", 2)).rejects.toMatchObject({ code: "ATTEMPT.STALE_EPOCH" });
    await expect(mint(tk, "has space")).rejects.toMatchObject({ code: "REQUEST.INVALID" });
    await expect(mint(tk, "")).rejects.toMatchObject({ code: "REQUEST.INVALID" });
    await completeAttempt(t.db(), TEST_CFG, {
      attemptId: tk.attemptId,
      jobId: tk.jobId,
      epoch: 1,
      outcome: "success",
      sandboxDestroyed: true,
    });
    await expect(mint(tk)).rejects.toMatchObject({ code: "ATTEMPT.STALE_EPOCH" });
  });

  it("refuses an untrusted run's token unless its repo opted in (issue 28)", async () => {
    const tenant = await seedTenant(t.db());
    const tk = await claimed(tenant, { trust: "untrusted", ref: "refs/pull/9/head" });
    await expect(mint(tk)).rejects.toMatchObject({ code: "ID_TOKEN.UNTRUSTED_REFUSED" });
    const none = await t.db().$queryRaw<
      { n: number }[]
    >`SELECT count(*)::int AS n FROM id_token WHERE job_id = ${tk.jobId}::uuid`;
    expect(none[0]?.n).toBe(0);
  });

  it("a fork PR named `main`: with the opt-in, sub is repo:<repo>:pull_request and the claims carry the trust class", async () => {
    const tenant = await seedTenant(t.db());
    await setUntrustedIdTokens(t.db(), { fullName: tenant.repoName, enabled: true, actor: "cli:test" });
    // The ref admission stores for a PR (head branch `main` kept apart): never refs/heads/main.
    const tk = await claimed(tenant, { trust: "untrusted", ref: "refs/pull/9/head" });
    const m = await mint(tk);
    expect(m.claims).toMatchObject({
      sub: `repo:${tenant.repoName}:pull_request`,
      ref: "refs/pull/9/head",
      trust_class: "untrusted",
    });
    expect(m.claims.sub).not.toContain("refs/heads/main");
  });

  it("gives an untrusted run of an opted-in repo a token that says so (relying parties decide, ADR 0024)", async () => {
    const tenant = await seedTenant(t.db());
    await setUntrustedIdTokens(t.db(), { fullName: tenant.repoName, enabled: true, actor: "cli:test" });
    const tk = await claimed(tenant, { trust: "untrusted" });
    const m = await mint(tk);
    expect(m.claims).toMatchObject({ trust_class: "untrusted", isolation: "microvm" });
    const v = await verifyIdToken(t.db(), m.value, { audience: "sts.example", issuer: ISSUER });
    expect(v.ok && v.claims.trust_class).toBe("untrusted");
  });
});

describe("verification and introspection", () => {
  it("a fresh token verifies; wrong audience, issuer, tampering, alg none and unknown jti do not", async () => {
    const tenant = await seedTenant(t.db());
    const tk = await claimed(tenant);
    const { value } = await mint(tk);
    const v = (jwt: string, audience: string | null = "sts.example", issuer = ISSUER) =>
      verifyIdToken(t.db(), jwt, { audience, issuer }).then((r) => (r.ok ? "ok" : r.reason));
    expect(await v(value)).toBe("ok");
    expect(await v(value, "other")).toBe("wrong_audience");
    expect(await v(value, "sts.example", "https://evil.test")).toBe("wrong_issuer");
    const [h, p, s] = value.split(".") as [string, string, string];
    const claims = JSON.parse(Buffer.from(p, "base64url").toString()) as Record<string, unknown>;
    const forged = Buffer.from(JSON.stringify({ ...claims, trust_class: "trusted", org: "other" })).toString(
      "base64url",
    );
    expect(await v(`${h}.${forged}.${s}`)).toBe("bad_signature");
    const none = Buffer.from(
      JSON.stringify({ alg: "none", kid: JSON.parse(Buffer.from(h, "base64url").toString()).kid }),
    ).toString("base64url");
    expect(await v(`${none}.${p}.`)).toBe("alg_not_allowed");
    expect(await v("not-a-jwt")).toBe("malformed");
    const unknownKid = Buffer.from(JSON.stringify({ alg: "ES256", kid: "ik-nope" })).toString("base64url");
    expect(await v(`${unknownKid}.${p}.${s}`)).toBe("unknown_kid");
    expect(
      await v(value, "sts.example", ISSUER).then(() =>
        verifyIdToken(t.db(), value, {
          audience: "sts.example",
          issuer: ISSUER,
          nowMs: (Number(claims.exp) + 1) * 1000,
        }),
      ),
    ).toMatchObject({ ok: false, reason: "expired" });
  });

  it("goes inactive once epoch N+1 exists, at once, not at exp", async () => {
    const tenant = await seedTenant(t.db());
    const tk = await claimed(tenant);
    const { value, claims } = await mint(tk);
    const intro = () => introspectIdToken(t.db(), value, { issuer: ISSUER, callerOrgId: tenant.orgId });
    expect(await intro()).toMatchObject({ active: true, jti: claims.jti, attempt: 1, token_type: "id_token" });
    // Another org's caller learns nothing about this token, live as it is.
    const other = await seedTenant(t.db());
    expect(await introspectIdToken(t.db(), value, { issuer: ISSUER, callerOrgId: other.orgId })).toEqual({
      active: false,
    });

    // The host goes silent: its lease lapses and the reconciler fences epoch 1 (the token's own
    // exp, bound by the lease as it was, is still ahead).
    await t.db()
      .$executeRaw`UPDATE attempt SET lease_expires_at = now() - interval '1 millisecond' WHERE id = ${tk.attemptId}::uuid`;
    expect((await reconcile(t.db(), TEST_CFG)).fenced).toBeGreaterThanOrEqual(1);
    const session = await newSession(t.db(), tenant, 10, "h2");
    const again = await claimJob(t.db(), TEST_CFG, { sessionId: session, claimRequestId: randomUUID() });
    expect(again.kind === "claimed" && again.ticket.epoch).toBe(2);
    expect(await intro()).toEqual({ active: false });
    const v = await verifyIdToken(t.db(), value, {
      audience: "sts.example",
      issuer: ISSUER,
      nowMs: (claims.iat + 1) * 1000,
    });
    expect(v).toEqual({ ok: false, reason: "attempt_not_current" });
    // The stale attempt cannot mint either.
    await expect(mint(tk)).rejects.toMatchObject({ code: "ATTEMPT.STALE_EPOCH" });
  });

  it("an unknown or expired-and-recorded token is inactive", async () => {
    const tenant = await seedTenant(t.db());
    const tk = await claimed(tenant);
    const { value, claims } = await mint(tk);
    await t.db()
      .$executeRaw`UPDATE id_token SET expires_at = issued_at + interval '1 millisecond' WHERE jti = ${claims.jti}::uuid`;
    expect(await introspectIdToken(t.db(), value, { issuer: ISSUER, callerOrgId: tenant.orgId })).toEqual({
      active: false,
    });
    await t.db().$executeRaw`DELETE FROM id_token WHERE jti = ${claims.jti}::uuid`;
    expect(await verifyIdToken(t.db(), value, { audience: "sts.example", issuer: ISSUER })).toEqual({
      ok: false,
      reason: "unknown_token",
    });
  });
});

describe("signing keys", () => {
  it("rotation signs with the new key at once and publishes the old one until its last token expires", async () => {
    const tenant = await seedTenant(t.db());
    const tk = await claimed(tenant);
    const before = await mint(tk);
    const oldKid = JSON.parse(Buffer.from(before.value.split(".")[0] ?? "", "base64url").toString()).kid as string;
    const r = await rotateIdTokenKey(t.db(), kek, { actor: "cli:test" });
    expect(r.retired).toBe(oldKid);
    const audited = await t.db().$queryRaw<{ actor: string; org_id: string | null; data: { retired: string } }[]>`
      SELECT actor, org_id, data FROM audit_event WHERE kind = 'id_token_key.rotated' AND subject = ${r.kid}`;
    expect(audited).toEqual([
      { actor: "cli:test", org_id: null, data: expect.objectContaining({ retired: oldKid, kek_id: kek.id }) },
    ]);
    // Exactly the last expiry among every token the old key signed (other cases minted with it too).
    const last = await t.db().$queryRaw<
      { at: Date }[]
    >`SELECT max(expires_at) AS at FROM id_token WHERE kid = ${oldKid}`;
    expect(r.retiredVerifyUntil).toBe(last[0]?.at.toISOString());
    expect(Date.parse(r.retiredVerifyUntil ?? "")).toBeGreaterThanOrEqual(Date.parse(before.expiresAt));
    const after = await mint(tk);
    const newKid = JSON.parse(Buffer.from(after.value.split(".")[0] ?? "", "base64url").toString()).kid as string;
    expect(newKid).toBe(r.kid);
    expect((await idTokenJwks(t.db())).keys.map((k) => k.kid)).toEqual(expect.arrayContaining([oldKid, newKid]));
    expect(await verifyIdToken(t.db(), before.value, { audience: "sts.example", issuer: ISSUER })).toMatchObject({
      ok: true,
    });
    // Past the old key's last token it drops out of the JWKS.
    await t.db()
      .$executeRaw`UPDATE id_token_key SET verify_until = now() - interval '1 millisecond' WHERE kid = ${oldKid}`;
    const kids = (await idTokenJwks(t.db())).keys.map((k) => k.kid);
    expect(kids).toContain(newKid);
    expect(kids).not.toContain(oldKid);
    expect((await listIdTokenKeys(t.db())).find((k) => k.kid === oldKid)).toMatchObject({ published: false });
  });

  it("keeps only public members in the JWKS and seals the private key under the KEK", async () => {
    const jwks = await idTokenJwks(t.db());
    expect(jwks.keys.length).toBeGreaterThan(0);
    for (const k of jwks.keys) expect(Object.keys(k).sort()).toEqual(["alg", "crv", "kid", "kty", "use", "x", "y"]);
    const rows = await t.db().$queryRaw<{ kid: string; private_key_sealed: Uint8Array; kek_id: string }[]>`
      SELECT kid, private_key_sealed, kek_id FROM id_token_key WHERE retired_at IS NULL`;
    const row = rows[0];
    if (!row) throw new Error("no signing key");
    expect(row.kek_id).toBe(kek.id);
    const der = openPrivateKey(kek, row.kid, Buffer.from(row.private_key_sealed));
    expect(Buffer.from(row.private_key_sealed).includes(der.subarray(-32))).toBe(false);
    expect(() => openPrivateKey(kekFromBytes(randomBytes(32)), row.kid, Buffer.from(row.private_key_sealed))).toThrow();
    expect(() => openPrivateKey(kek, "another-kid", Buffer.from(row.private_key_sealed))).toThrow();
    // A process with another KEK refuses to sign rather than mint under a key it cannot open.
    const tenant = await seedTenant(t.db());
    const tk = await claimed(tenant);
    await expect(
      mintIdToken(
        t.db(),
        { issuer: ISSUER, kek: kekFromBytes(randomBytes(32)) },
        { jobId: tk.jobId, attemptId: tk.attemptId, epoch: 1, audience: "x" },
      ),
    ).rejects.toMatchObject({ code: "ID_TOKEN.KEY_UNAVAILABLE" });
  });

  it("creates the KEK file once, mode 0600, and every process reads the same one", async () => {
    const dir = await mkdtemp(path.join(tmpdir(), "kiln-kek-"));
    const file = path.join(dir, "sub", "identity-kek");
    const all = await Promise.all([1, 2, 3, 4].map(() => loadOrCreateIdentityKek(file)));
    expect(new Set(all.map((k) => k.id)).size).toBe(1);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect(Buffer.from((await readFile(file, "utf8")).trim(), "base64").length).toBe(32);
  });
});
