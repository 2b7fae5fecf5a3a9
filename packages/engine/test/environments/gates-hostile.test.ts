import pg from "pg";
import { describe, expect, it } from "vitest";
import {
  createEnvironment,
  getEnvironment,
  getPromotion,
  listEnvironments,
  listOverrides,
  listPointerMoves,
  overridePromotion,
  requestPromotion,
  reviewPromotion,
  setEnvironmentPolicy,
  type EnvActor,
} from "../../src/environments/index.ts";
import { authenticateApiToken } from "../../src/identity/authenticate.ts";
import { createMemberApiToken, removeMember } from "../../src/tenants/index.ts";
import { useS3 } from "../artifacts/support.ts";
import { useSigner } from "../attestation/support.ts";
import { useJournalPool } from "../logs/support.ts";
import { seedTenant, useTestDb } from "../support.ts";
import { envDeps, member, producedArtifact, type Infra } from "./support.ts";

const t = useTestDb();
const s3 = useS3();
const pool = useJournalPool(t.url);
const signer = useSigner();
const x: Infra = { db: t.db, pool, store: s3.store, signer };
const deps = envDeps();
const FREEZE_NOW = { start_at: "2020-01-01T00:00:00Z", end_at: "2099-01-01T00:00:00Z", name: "forever" };
const soon = (ms: number) => new Date(Date.now() + ms);
const codes = (p: { decision: { reasons: { code: string; status: string }[] } }) =>
  p.decision.reasons.map((r) => r.code);

async function setup(envName = "production") {
  const tenant = await seedTenant(t.db());
  const admin = await member(t.db(), tenant, "admin");
  const admin2 = await member(t.db(), tenant, "admin");
  const dev = await member(t.db(), tenant, "member");
  const env = await createEnvironment(t.db(), admin, { repoId: tenant.repoId, name: envName });
  return { tenant, admin, admin2, dev, env };
}

/** Another connection holds `table` ACCESS EXCLUSIVE for `ms`: every read of it blocks (an outage). */
async function lockFor(table: string, ms: number): Promise<{ released: Promise<void> }> {
  const c = new pg.Client({ connectionString: t.url() });
  await c.connect();
  await c.query("BEGIN");
  await c.query(`LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`);
  const released = new Promise<void>((resolve) => {
    setTimeout(() => {
      void c
        .query("ROLLBACK")
        .then(() => c.end())
        .then(resolve);
    }, ms);
  });
  return { released };
}

describe("fail closed, fail open", () => {
  it("production denies with GATE.UNAVAILABLE when the attestation lookup times out", async () => {
    const { tenant, dev, env } = await setup();
    const a = await producedArtifact(x, tenant);
    const lock = await lockFor("attestation", 1_500);
    const p = await requestPromotion(t.db(), envDeps(300), dev, {
      environmentId: env.id,
      artifact: a,
      reason: "outage",
    });
    await lock.released;
    expect([p.state, p.decision.verdict, p.decision.failMode]).toEqual(["denied", "deny", "closed"]);
    expect(p.decision.reasons.find((r) => r.gate === "provenance")).toMatchObject({
      status: "unavailable",
      code: "GATE.UNAVAILABLE",
    });
    expect(await listPointerMoves(t.db(), tenant.orgId, env.id)).toEqual([]);
  });

  it("an environment configured to fail open skips the unreadable gate and records it on the decision", async () => {
    const { tenant, admin, dev, env } = await setup("preview");
    await expect(
      setEnvironmentPolicy(t.db(), admin, { environmentId: env.id, policy: { fail_mode: "open", gates: {} } }),
    ).resolves.toMatchObject({ version: 2 });
    await setEnvironmentPolicy(t.db(), admin, {
      environmentId: env.id,
      policy: { fail_mode: "open", gates: { required_outcomes: {}, provenance: {} } },
    });
    const a = await producedArtifact(x, tenant);
    const lock = await lockFor("job_run", 1_500);
    const p = await requestPromotion(t.db(), envDeps(300), dev, {
      environmentId: env.id,
      artifact: a,
      reason: "outage",
    });
    await lock.released;
    expect([p.state, p.decision.verdict, p.decision.failMode]).toEqual(["promoted", "allow", "open"]);
    expect(p.decision.reasons.find((r) => r.gate === "required_outcomes")).toMatchObject({
      status: "skipped",
      code: "GATE.UNAVAILABLE",
    });
    const audit = await t.db().$queryRaw<{ data: { failMode: string } }[]>`
      SELECT data FROM audit_event WHERE subject = ${p.id} AND kind = 'promotion.decided'`;
    expect(audit[0]?.data.failMode).toBe("open");
  });

  it("production cannot be set to fail open", async () => {
    const { admin, env } = await setup();
    await expect(
      setEnvironmentPolicy(t.db(), admin, { environmentId: env.id, policy: { fail_mode: "open", gates: {} } }),
    ).rejects.toMatchObject({ code: "POLICY.INVALID" });
    await expect(
      t.db().$executeRaw`UPDATE environment SET fail_mode = 'open' WHERE id = ${env.id}::uuid`,
    ).rejects.toThrow(/environment_production_fails_closed/);
    await expect(
      t.db().$executeRaw`UPDATE environment_policy SET comment = 'x' WHERE environment_id = ${env.id}::uuid`,
    ).rejects.toThrow(/immutable/);
  });
});

describe("overrides (break glass)", () => {
  it("an admin's override needs a second admin in production; it records actor, reason, expiry and the gates", async () => {
    const { tenant, admin, admin2, dev, env } = await setup();
    await setEnvironmentPolicy(t.db(), admin, {
      environmentId: env.id,
      policy: {
        gates: {
          required_outcomes: {},
          provenance: {},
          approvals: { count: 1 },
          freeze_windows: { windows: [FREEZE_NOW] },
        },
        overrides: { second_approver: true },
      },
    });
    const a = await producedArtifact(x, tenant);
    const p = await requestPromotion(t.db(), deps, dev, { environmentId: env.id, artifact: a, reason: "hotfix" });
    expect(codes(p)).toEqual(expect.arrayContaining(["APPROVALS.PENDING", "FREEZE.ACTIVE"]));
    await expect(
      overridePromotion(t.db(), deps, dev, { promotionId: p.id, reason: "me", expiresAt: soon(60_000) }),
    ).rejects.toMatchObject({ code: "AUTH.FORBIDDEN" });
    await expect(
      overridePromotion(t.db(), deps, admin, {
        promotionId: p.id,
        reason: "x",
        expiresAt: new Date(Date.now() - 1000),
      }),
    ).rejects.toMatchObject({ code: "OVERRIDE.INVALID_EXPIRY" });

    const first = await overridePromotion(t.db(), deps, admin, {
      promotionId: p.id,
      reason: "sev1 outage",
      expiresAt: soon(600_000),
    });
    expect(first.state).toBe("pending");
    expect(first.overrides).toEqual([
      expect.objectContaining({
        state: "pending",
        actorLogin: admin.login,
        reason: "sev1 outage",
        gates: ["approvals", "freeze_windows"],
      }),
    ]);
    await expect(
      overridePromotion(t.db(), deps, admin, { promotionId: p.id, reason: "again", expiresAt: soon(600_000) }),
    ).rejects.toMatchObject({ code: "OVERRIDE.SECOND_APPROVER_SAME" });
    const done = await overridePromotion(t.db(), deps, admin2, {
      promotionId: p.id,
      reason: "agreed",
      expiresAt: soon(600_000),
    });
    expect([done.state, done.decision.verdict]).toEqual(["promoted", "allow"]);
    expect(done.decision.reasons.filter((r) => r.status === "overridden").map((r) => r.gate)).toEqual([
      "approvals",
      "freeze_windows",
    ]);
    expect(done.overrides[0]).toMatchObject({ state: "applied", secondApprover: admin2.login });
    expect((await listOverrides(t.db(), tenant.orgId)).map((o) => o.promotionId)).toEqual([p.id]);
    const audit = await t.db().$queryRaw<
      { kind: string }[]
    >`SELECT kind FROM audit_event WHERE subject = ${p.id} ORDER BY seq`;
    expect(audit.map((e) => e.kind)).toEqual([
      "promotion.decided",
      "promotion.override_recorded",
      "promotion.override_seconded",
      "promotion.decided",
      "promotion.override_applied",
    ]);
  });

  it("an override that expires before its second approval moves nothing, and does not block break glass for good", async () => {
    const { tenant, admin, admin2, dev, env } = await setup();
    const a = await producedArtifact(x, tenant);
    const p = await requestPromotion(t.db(), deps, dev, { environmentId: env.id, artifact: a, reason: "hotfix" });
    await overridePromotion(t.db(), deps, admin, { promotionId: p.id, reason: "quick", expiresAt: soon(700) });
    await new Promise((r) => setTimeout(r, 900));
    // A late second is no second: it records a new override, which waits for its own second key.
    const late = await overridePromotion(t.db(), deps, admin2, {
      promotionId: p.id,
      reason: "late",
      expiresAt: soon(600_000),
    });
    expect(late.state).toBe("pending");
    expect(late.overrides.filter((o) => o.state === "pending").map((o) => o.reason)).toContain("late");
    expect(await listPointerMoves(t.db(), tenant.orgId, env.id)).toEqual([]);
    // Issue 28: the expired one no longer blocks its own opener either; they second the new one.
    const done = await overridePromotion(t.db(), deps, admin, {
      promotionId: p.id,
      reason: "agreed",
      expiresAt: soon(600_000),
    });
    expect([done.state, done.decision.verdict]).toEqual(["promoted", "allow"]);
  });

  it("the opener of an expired override can record a new one", async () => {
    const { tenant, admin, admin2, dev, env } = await setup();
    const a = await producedArtifact(x, tenant);
    const p = await requestPromotion(t.db(), deps, dev, { environmentId: env.id, artifact: a, reason: "hotfix" });
    await overridePromotion(t.db(), deps, admin, { promotionId: p.id, reason: "quick", expiresAt: soon(700) });
    await new Promise((r) => setTimeout(r, 900));
    const again = await overridePromotion(t.db(), deps, admin, {
      promotionId: p.id,
      reason: "again",
      expiresAt: soon(600_000),
    });
    expect(again.state).toBe("pending");
    // ...and it still takes another admin: the opener cannot second their new override.
    await expect(
      overridePromotion(t.db(), deps, admin, { promotionId: p.id, reason: "self", expiresAt: soon(600_000) }),
    ).rejects.toMatchObject({ code: "OVERRIDE.SECOND_APPROVER_SAME" });
    const done = await overridePromotion(t.db(), deps, admin2, {
      promotionId: p.id,
      reason: "agreed",
      expiresAt: soon(600_000),
    });
    expect(done.state).toBe("promoted");
  });

  it("the requester cannot be the second approver of an override on their own promotion", async () => {
    const { tenant, admin, admin2, env } = await setup();
    const a = await producedArtifact(x, tenant);
    const p = await requestPromotion(t.db(), deps, admin2, { environmentId: env.id, artifact: a, reason: "mine" });
    await overridePromotion(t.db(), deps, admin, { promotionId: p.id, reason: "sev1", expiresAt: soon(600_000) });
    await expect(
      overridePromotion(t.db(), deps, admin2, { promotionId: p.id, reason: "me too", expiresAt: soon(600_000) }),
    ).rejects.toMatchObject({ code: "OVERRIDE.SECOND_APPROVER_SAME" });
    expect(await listPointerMoves(t.db(), tenant.orgId, env.id)).toEqual([]);
  });
});

describe("hostile callers", () => {
  it("another org's admin cannot see or act on an environment or promotion (404s), nor promote a foreign artifact", async () => {
    const { tenant, admin, dev, env } = await setup();
    const a = await producedArtifact(x, tenant);
    const p = await requestPromotion(t.db(), deps, dev, { environmentId: env.id, artifact: a, reason: "mine" });
    const other = await seedTenant(t.db());
    const intruder = await member(t.db(), other, "admin");
    await expect(getEnvironment(t.db(), intruder.orgId, env.id)).rejects.toMatchObject({ code: "ENV.NOT_FOUND" });
    await expect(listEnvironments(t.db(), intruder.orgId, tenant.repoId)).rejects.toMatchObject({
      code: "REPO.NOT_FOUND",
    });
    await expect(getPromotion(t.db(), intruder.orgId, p.id)).rejects.toMatchObject({ code: "PROMOTION.NOT_FOUND" });
    await expect(
      reviewPromotion(t.db(), deps, intruder, { promotionId: p.id, decision: "approve" }),
    ).rejects.toMatchObject({
      code: "PROMOTION.NOT_FOUND",
    });
    await expect(
      overridePromotion(t.db(), deps, intruder, { promotionId: p.id, reason: "x", expiresAt: soon(60_000) }),
    ).rejects.toMatchObject({ code: "PROMOTION.NOT_FOUND" });
    await expect(
      setEnvironmentPolicy(t.db(), intruder, { environmentId: env.id, policy: { gates: {} } }),
    ).rejects.toMatchObject({ code: "ENV.NOT_FOUND" });
    await expect(
      requestPromotion(t.db(), deps, intruder, { environmentId: env.id, artifact: a, reason: "x" }),
    ).rejects.toMatchObject({ code: "ENV.NOT_FOUND" });
    await expect(createEnvironment(t.db(), intruder, { repoId: tenant.repoId, name: "evil" })).rejects.toMatchObject({
      code: "REPO.NOT_FOUND",
    });
    // Their own environment cannot take our artifact.
    const theirs = await createEnvironment(t.db(), intruder, { repoId: other.repoId, name: "staging" });
    await expect(
      requestPromotion(t.db(), deps, intruder, { environmentId: theirs.id, artifact: a, reason: "steal" }),
    ).rejects.toMatchObject({ code: "PROMOTION.ARTIFACT_NOT_FOUND" });
    expect((await getPromotion(t.db(), tenant.orgId, p.id)).approvals).toEqual([]);
    void admin;
  });

  it("a member cannot create environments, set policy or override; an auditor cannot request", async () => {
    const { tenant, dev, env } = await setup();
    await expect(createEnvironment(t.db(), dev, { repoId: tenant.repoId, name: "x" })).rejects.toMatchObject({
      code: "AUTH.FORBIDDEN",
    });
    await expect(
      setEnvironmentPolicy(t.db(), dev, { environmentId: env.id, policy: { gates: {} } }),
    ).rejects.toMatchObject({
      code: "AUTH.FORBIDDEN",
    });
    const auditor = await member(t.db(), tenant, "auditor");
    const a = await producedArtifact(x, tenant);
    await expect(
      requestPromotion(t.db(), deps, auditor, { environmentId: env.id, artifact: a, reason: "x" }),
    ).rejects.toMatchObject({ code: "AUTH.FORBIDDEN" });
    const versions = await t.db().$queryRaw<{ n: bigint }[]>`
      SELECT count(*) AS n FROM environment_policy WHERE environment_id = ${env.id}::uuid`;
    expect(Number(versions[0]?.n)).toBe(1);
  });

  it("one person cannot move production with tokens: token-triggered run, org-token request, dashboard approval (issue 28)", async () => {
    const { tenant, admin2, dev, env } = await setup();
    const login = `mallory-${Math.random().toString(36).slice(2, 7)}`;
    const mallory = await member(t.db(), tenant, "admin", login);
    // Mallory triggers the build with her personal token: the run's actor string is `token:<name>`,
    // which no login ever equals, but the run records her member id.
    const pat = await authenticateApiToken(
      t.db(),
      `Bearer ${(await createMemberApiToken(t.db(), { orgSlug: tenant.slug, login })).token}`,
    );
    const built = await producedArtifact(x, tenant, {
      author: { orgId: tenant.orgId, role: pat.role, userId: pat.userId ?? null, login: null, actor: pat.name },
    });
    // She requests the promotion with an org token (no person): refused where approvals with
    // separation of duties apply, before anything is written.
    const orgCaller = await authenticateApiToken(t.db(), `Bearer ${tenant.token}`);
    const orgToken: EnvActor = {
      orgId: orgCaller.orgId,
      role: "admin",
      userId: orgCaller.userId ?? null,
      login: orgCaller.login ?? null,
      actor: orgCaller.name,
    };
    await expect(
      requestPromotion(t.db(), deps, orgToken, { environmentId: env.id, artifact: built, reason: "ship" }),
    ).rejects.toMatchObject({ code: "APPROVAL.MEMBER_REQUIRED" });
    const rows = await t.db().$queryRaw<{ n: bigint }[]>`
      SELECT count(*) AS n FROM promotion WHERE environment_id = ${env.id}::uuid`;
    expect(Number(rows[0]?.n)).toBe(0);

    // A colleague requests it instead; Mallory, the change's author by member id, cannot approve.
    const p = await requestPromotion(t.db(), deps, dev, { environmentId: env.id, artifact: built, reason: "ship" });
    expect(p.state).toBe("pending");
    await expect(
      reviewPromotion(t.db(), deps, mallory, { promotionId: p.id, decision: "approve" }),
    ).rejects.toMatchObject({ code: "APPROVAL.SEPARATION_OF_DUTIES" });
    expect((await getPromotion(t.db(), tenant.orgId, p.id)).approvals).toEqual([]);
    expect(await listPointerMoves(t.db(), tenant.orgId, env.id)).toEqual([]);
    // A third person can.
    const ok = await reviewPromotion(t.db(), deps, admin2, { promotionId: p.id, decision: "approve" });
    expect(ok.state).toBe("promoted");

    // A build nobody can be named for (an org token triggered it): no approver can be told apart
    // from its author, so no approval counts.
    const anon = await producedArtifact(x, tenant, { author: null });
    const q = await requestPromotion(t.db(), deps, dev, { environmentId: env.id, artifact: anon, reason: "ship" });
    await expect(
      reviewPromotion(t.db(), deps, admin2, { promotionId: q.id, decision: "approve" }),
    ).rejects.toMatchObject({ code: "APPROVAL.SEPARATION_OF_DUTIES", message: /not a known member/ });
    expect((await getPromotion(t.db(), tenant.orgId, q.id)).state).toBe("pending");
  });

  it("a personal token acts as its member with the member's current role, and dies with the membership", async () => {
    const { tenant } = await setup();
    const login = `pat-${Math.random().toString(36).slice(2, 7)}`;
    const m: EnvActor = await member(t.db(), tenant, "member", login);
    const tok = await createMemberApiToken(t.db(), { orgSlug: tenant.slug, login });
    const caller = await authenticateApiToken(t.db(), `Bearer ${tok.token}`);
    expect(caller).toMatchObject({ orgId: tenant.orgId, role: "member", userId: m.userId, login });
    await expect(createMemberApiToken(t.db(), { orgSlug: tenant.slug, login: "nobody-here" })).rejects.toMatchObject({
      code: "MEMBER.NOT_FOUND",
    });
    await removeMember(t.db(), { orgSlug: tenant.slug, member: { userId: m.userId ?? "" }, actor: "test" });
    await expect(authenticateApiToken(t.db(), `Bearer ${tok.token}`)).rejects.toMatchObject({
      code: "AUTH.UNAUTHENTICATED",
    });
  });
});
