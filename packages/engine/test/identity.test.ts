import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { heartbeat } from "../src/attempts/heartbeat.ts";
import { reconcile } from "../src/attempts/reconcile.ts";
import { claimJob, type JobTicket } from "../src/dispatch/claim-job.ts";
import { setPoolPolicy } from "../src/dispatch/pool-policy.ts";
import { registerSession } from "../src/dispatch/register-session.ts";
import { listAgentTokens, revokeAgentToken } from "../src/identity/agent-tokens.ts";
import { listApiTokens, revokeApiToken } from "../src/identity/api-tokens.ts";
import { authenticateAgentToken, authenticateApiToken, authenticateJobToken } from "../src/identity/authenticate.ts";
import { checkJobToken, hashSecret, signJobToken } from "../src/identity/tokens.ts";
import { JOB_TOKEN_TTL_MS, jobTokenKeyring, platformKey, rotateJobTokenKey } from "../src/identity/job-token-keys.ts";
import { createAgentToken, createApiToken } from "../src/tenants/admin.ts";
import { def, ONE_JOB, seedFrozenRun, seedTenant, TEST_CFG, useTestDb, type Tenant } from "./support.ts";

const t = useTestDb();
const LABELS = { os: "linux", arch: "x64", resource_class: "small", isolation: "process" as const };

async function hostFor(tenant: Tenant, opts: { pool?: string; orgSlug?: string } = {}) {
  const cred = await createAgentToken(t.db(), { pool: opts.pool ?? tenant.pool, ...opts });
  const s = await registerSession(t.db(), TEST_CFG, {
    agentTokenId: cred.id,
    pool: cred.pool,
    body: { hostname: `h-${cred.id.slice(0, 6)}`, capacity: 4, labels: LABELS },
  });
  return { ...cred, sessionId: s.sessionId, hash: hashSecret(cred.token) };
}

async function claim(host: { sessionId: string; hash: string }, cfg = TEST_CFG): Promise<JobTicket | null> {
  const r = await claimJob(t.db(), cfg, {
    sessionId: host.sessionId,
    claimRequestId: randomUUID(),
    credentialHash: host.hash,
  });
  return r.kind === "claimed" ? r.ticket : null;
}

describe("API tokens", () => {
  it("tells an expired token from a revoked one, and accepts a live one", async () => {
    const tenant = await seedTenant(t.db());
    const live = await createApiToken(t.db(), { orgSlug: tenant.slug, role: "admin", name: "live" });
    expect(Date.parse(live.expiresAt) - Date.now()).toBeGreaterThan(89 * 86_400_000);
    const caller = await authenticateApiToken(t.db(), `Bearer ${live.token}`);
    expect(caller).toMatchObject({ tokenId: live.id, orgId: tenant.orgId, role: "admin" });

    const old = await createApiToken(t.db(), { orgSlug: tenant.slug, role: "member", name: "old", expiresInDays: 1 });
    await t.db().$executeRaw`UPDATE api_token SET expires_at = now() - interval '1 second' WHERE id = ${old.id}::uuid`;
    await expect(authenticateApiToken(t.db(), `Bearer ${old.token}`)).rejects.toMatchObject({
      code: "AUTH.TOKEN_EXPIRED",
    });

    await revokeApiToken(t.db(), { orgSlug: tenant.slug, tokenId: live.id });
    await expect(authenticateApiToken(t.db(), `Bearer ${live.token}`)).rejects.toMatchObject({
      code: "AUTH.TOKEN_REVOKED",
    });
    await expect(authenticateApiToken(t.db(), "Bearer kiln_nope")).rejects.toMatchObject({
      code: "AUTH.UNAUTHENTICATED",
    });
    await expect(
      createApiToken(t.db(), { orgSlug: tenant.slug, role: "admin", expiresInDays: 0 }),
    ).rejects.toMatchObject({
      code: "REQUEST.INVALID",
    });
  });

  it("writes last-used at most once a minute", async () => {
    const tenant = await seedTenant(t.db());
    const tok = await createApiToken(t.db(), { orgSlug: tenant.slug, role: "member" });
    const lastUsed = async () =>
      (
        await t.db().$queryRaw<
          { at: Date | null }[]
        >`SELECT last_used_at AS at FROM api_token WHERE id = ${tok.id}::uuid`
      )[0]?.at ?? null;
    expect(await lastUsed()).toBeNull();
    await authenticateApiToken(t.db(), `Bearer ${tok.token}`);
    const first = await lastUsed();
    expect(first).not.toBeNull();
    for (let i = 0; i < 5; i++) await authenticateApiToken(t.db(), `Bearer ${tok.token}`);
    expect((await lastUsed())?.getTime()).toBe(first?.getTime());
    // Over a minute old: the next use writes it again.
    await t.db()
      .$executeRaw`UPDATE api_token SET last_used_at = now() - interval '61 seconds' WHERE id = ${tok.id}::uuid`;
    const before = (await lastUsed())?.getTime() ?? 0;
    await authenticateApiToken(t.db(), `Bearer ${tok.token}`);
    expect((await lastUsed())?.getTime()).toBeGreaterThan(before + 60_000);
  });

  it("lists and revokes only the org's own tokens; another org's id is not found", async () => {
    const a = await seedTenant(t.db());
    const b = await seedTenant(t.db());
    const bTok = await createApiToken(t.db(), { orgSlug: b.slug, role: "admin", name: "b-admin" });
    const aList = await listApiTokens(t.db(), { orgSlug: a.slug });
    expect(aList.map((x) => x.id)).toEqual([a.tokenId]);
    expect(aList[0]).toMatchObject({ state: "active", lastUsedAt: null, revokedAt: null });
    await expect(revokeApiToken(t.db(), { orgSlug: a.slug, tokenId: bTok.id })).rejects.toMatchObject({
      code: "TOKEN.NOT_FOUND",
    });
    await expect(revokeApiToken(t.db(), { orgSlug: a.slug, tokenId: "not-a-uuid" })).rejects.toMatchObject({
      code: "TOKEN.NOT_FOUND",
    });
    // B's token still works: A's attempt changed nothing.
    await expect(authenticateApiToken(t.db(), `Bearer ${bTok.token}`)).resolves.toMatchObject({ orgId: b.orgId });
    const first = await revokeApiToken(t.db(), { orgSlug: b.slug, tokenId: bTok.id });
    const again = await revokeApiToken(t.db(), { orgSlug: b.slug, tokenId: bTok.id });
    expect(again.revokedAt).toBe(first.revokedAt);
    expect((await listApiTokens(t.db(), { orgSlug: b.slug })).find((x) => x.id === bTok.id)?.state).toBe("revoked");
  });
});

describe("host credentials", () => {
  it("a revoked host's claim and heartbeat are refused and its attempt is fenced within one lease", async () => {
    const tenant = await seedTenant(t.db());
    const host = await hostFor(tenant);
    const short = { ...TEST_CFG, leaseTtlMs: 600 };
    await seedFrozenRun(t.db(), tenant, def(ONE_JOB));
    await seedFrozenRun(t.db(), tenant, def(ONE_JOB));
    const ticket = await claim(host, short);
    expect(ticket).not.toBeNull();
    await heartbeat(t.db(), short, { attemptId: ticket!.attemptId, jobId: ticket!.jobId, epoch: 1 });

    await revokeAgentToken(t.db(), { id: host.id });
    await expect(claim(host, short)).rejects.toMatchObject({ code: "AUTH.CREDENTIAL_REVOKED" });
    // Also when the caller vouched for the session itself (no credential given).
    await expect(
      claimJob(t.db(), short, { sessionId: host.sessionId, claimRequestId: randomUUID() }),
    ).rejects.toMatchObject({ code: "AUTH.CREDENTIAL_REVOKED" });
    await expect(authenticateAgentToken(t.db(), `Bearer ${host.token}`)).rejects.toMatchObject({
      code: "AUTH.CREDENTIAL_REVOKED",
    });
    await expect(
      heartbeat(t.db(), short, { attemptId: ticket!.attemptId, jobId: ticket!.jobId, epoch: 1 }),
    ).rejects.toMatchObject({ code: "ATTEMPT.HOST_REVOKED" });

    await new Promise((r) => setTimeout(r, 700));
    expect((await reconcile(t.db(), short)).fenced).toBeGreaterThanOrEqual(1);
    const a = await t.db().$queryRaw<{ status: string; outcome: string | null }[]>`
      SELECT status, outcome FROM attempt WHERE id = ${ticket!.attemptId}::uuid`;
    expect(a[0]?.outcome).toBe("platform_failure");
    const listed = (await listAgentTokens(t.db())).find((x) => x.id === host.id);
    expect(listed).toMatchObject({ pool: tenant.pool, sessions: 1 });
    expect(listed?.revokedAt).not.toBeNull();
    await expect(revokeAgentToken(t.db(), { id: randomUUID() })).rejects.toMatchObject({ code: "TOKEN.NOT_FOUND" });
  });

  it("a credential bound to pool P claims nothing from pool Q, nor through Q's session", async () => {
    const tenant = await seedTenant(t.db());
    await setPoolPolicy(t.db(), {
      name: `${tenant.pool}-p`,
      minIsolation: "process",
      development: true,
      actor: "test",
    });
    const p = await hostFor(tenant, { pool: `${tenant.pool}-p` });
    const q = await hostFor(tenant, { pool: tenant.pool });
    await seedFrozenRun(t.db(), tenant, def(ONE_JOB)); // in the tenant's pool: Q
    expect(await claim(p)).toBeNull();
    await expect(claim({ sessionId: q.sessionId, hash: p.hash })).rejects.toMatchObject({ code: "SESSION.NOT_FOUND" });
    expect((await claim(q))?.orgId).toBe(tenant.orgId);
  });

  it("a credential bound to an org takes only that org's jobs from a shared pool", async () => {
    const a = await seedTenant(t.db());
    const b = await seedTenant(t.db());
    // B's run is queued in A's pool: a shared pool with two orgs' work in it.
    const bInA = { ...b, pool: a.pool };
    const bRun = await seedFrozenRun(t.db(), bInA, def(ONE_JOB));
    const bound = await hostFor(a, { orgSlug: a.slug });
    for (const cfg of [TEST_CFG, { ...TEST_CFG, dispatchPolicy: "fifo" as const }])
      expect(await claim(bound, { ...cfg, dispatchViewMs: 0 })).toBeNull();
    const aRun = await seedFrozenRun(t.db(), a, def(ONE_JOB));
    const got = await claim(bound, { ...TEST_CFG, dispatchViewMs: 0 });
    expect(got?.runId).toBe(aRun);
    expect((await listAgentTokens(t.db())).find((x) => x.id === bound.id)?.org).toBe(a.slug);
    const shared = await hostFor(a);
    expect((await claim(shared, { ...TEST_CFG, dispatchViewMs: 0 }))?.runId).toBe(bRun);
  });
});

describe("job-token keys", () => {
  it("a token of the previous key verifies during the overlap and not after; unknown kids fail", async () => {
    const claims = { jobId: randomUUID(), attemptId: randomUUID(), epoch: 1 };
    const oldKey = await platformKey(t.db());
    const oldToken = signJobToken(oldKey, claims);
    const auth = (tok: string) => authenticateJobToken(t.db(), `Bearer ${tok}`, claims.jobId);
    await expect(auth(oldToken)).resolves.toEqual(claims);

    const r = await rotateJobTokenKey(t.db());
    expect(r).toMatchObject({ rotated: true, retired: oldKey.kid });
    const newKey = await platformKey(t.db());
    expect(newKey.kid).toBe(r.kid);
    expect(newKey.kid).not.toBe(oldKey.kid);
    await expect(auth(oldToken)).resolves.toEqual(claims);
    await expect(auth(signJobToken(newKey, claims))).resolves.toEqual(claims);

    // Pure check at the clock's edges: the overlap is the token lifetime after retirement.
    const ring = await jobTokenKeyring(t.db(), { reloadIfOlderThanMs: 0 });
    const until = ring.verifying.get(oldKey.kid)?.verifyUntil ?? 0;
    expect(until - Date.now()).toBeGreaterThan(JOB_TOKEN_TTL_MS - 60_000);
    expect(checkJobToken(ring, oldToken, until - 1)).toMatchObject({ ok: false, reason: "expired" });
    expect(checkJobToken(ring, signJobToken(oldKey, claims, until - 1000), until - 1)).toMatchObject({ ok: true });
    expect(checkJobToken(ring, signJobToken(oldKey, claims, until - 1000), until)).toMatchObject({
      ok: false,
      reason: "key_retired",
    });

    // After the overlap (moved into the past in the database), the old key no longer verifies.
    await t.db()
      .$executeRaw`UPDATE job_token_key SET verify_until = now() - interval '1 second' WHERE kid = ${oldKey.kid}`;
    await jobTokenKeyring(t.db(), { reloadIfOlderThanMs: 0 });
    await expect(auth(oldToken)).rejects.toMatchObject({ code: "AUTH.UNAUTHENTICATED" });
    await expect(auth(signJobToken(newKey, claims))).resolves.toEqual(claims);

    const forged = signJobToken({ kid: "kunknown", key: newKey.key }, claims);
    await expect(auth(forged)).rejects.toMatchObject({ code: "AUTH.UNAUTHENTICATED" });
    const tampered = signJobToken(newKey, claims).replace(`kjt_${newKey.kid}.`, `kjt_${oldKey.kid}.`);
    await expect(auth(tampered)).rejects.toMatchObject({ code: "AUTH.UNAUTHENTICATED" });
    await expect(auth(signJobToken(newKey, { ...claims, jobId: randomUUID() }))).rejects.toMatchObject({
      code: "AUTH.FORBIDDEN",
    });
  });

  it("the scheduled rotation only rotates a key older than its age, once under racing workers", async () => {
    const before = await platformKey(t.db());
    expect(await rotateJobTokenKey(t.db(), { ifOlderThanMs: 3_600_000 })).toMatchObject({ rotated: false });
    await t.db().$executeRaw`UPDATE job_token_key SET created_at = now() - interval '2 hours' WHERE retired_at IS NULL`;
    const racers = await Promise.all([1, 2, 3].map(() => rotateJobTokenKey(t.db(), { ifOlderThanMs: 3_600_000 })));
    expect(racers.filter((x) => x.rotated)).toHaveLength(1);
    const active = await t.db().$queryRaw<{ n: number }[]>`
      SELECT count(*)::int AS n FROM job_token_key WHERE retired_at IS NULL`;
    expect(active[0]?.n).toBe(1);
    expect((await platformKey(t.db())).kid).not.toBe(before.kid);
  });
});
