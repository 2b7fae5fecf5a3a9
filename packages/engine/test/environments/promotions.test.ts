import { describe, expect, it } from "vitest";
import {
  createEnvironment,
  getPromotion,
  listPointerMoves,
  overridePromotion,
  requestPromotion,
  requestRollback,
  reviewPromotion,
  setEnvironmentPolicy,
  type EnvActor,
} from "../../src/environments/index.ts";
import { useS3 } from "../artifacts/support.ts";
import { useSigner } from "../attestation/support.ts";
import { useJournalPool } from "../logs/support.ts";
import { seedTenant, useTestDb, type Tenant } from "../support.ts";
import { envDeps, member, producedArtifact, type Infra } from "./support.ts";

const t = useTestDb();
const s3 = useS3();
const pool = useJournalPool(t.url);
const signer = useSigner();
const x: Infra = { db: t.db, pool, store: s3.store, signer };
const deps = envDeps();

async function org(): Promise<{ tenant: Tenant; admin: EnvActor; admin2: EnvActor; dev: EnvActor; ops: EnvActor }> {
  const tenant = await seedTenant(t.db());
  return {
    tenant,
    admin: await member(t.db(), tenant, "admin"),
    admin2: await member(t.db(), tenant, "admin"),
    dev: await member(t.db(), tenant, "member"),
    ops: await member(t.db(), tenant, "member"),
  };
}

const promote = (a: EnvActor, environmentId: string, artifactId: string, reason = "ship it") =>
  requestPromotion(t.db(), deps, a, { environmentId, artifact: { artifactId }, reason });
const codes = (p: { decision: { reasons: { code: string }[] } }) => p.decision.reasons.map((r) => r.code);

describe("promotion by digest through staging to production", () => {
  it("staging allows an attested artifact: the pointer moves with its audit record, event and outbox message", async () => {
    const { tenant, admin, dev } = await org();
    const staging = await createEnvironment(t.db(), admin, { repoId: tenant.repoId, name: "staging" });
    const a = await producedArtifact(x, tenant);
    const p = await promote(dev, staging.id, a.artifactId);
    expect(p.state).toBe("promoted");
    expect(p.decision).toMatchObject({ verdict: "allow", failMode: "closed", policyVersion: 1 });
    expect(codes(p)).toEqual(["OUTCOMES.OK", "PROVENANCE.OK"]);
    expect(p.requester).toMatchObject({ userId: dev.userId, login: dev.login });

    const moves = await listPointerMoves(t.db(), tenant.orgId, staging.id);
    expect(moves).toEqual([
      expect.objectContaining({ kind: "promote", promotionId: p.id, toArtifactId: a.artifactId, fromDigest: null }),
    ]);
    const outbox = await t.db().$queryRaw<{ payload: Record<string, unknown> }[]>`
      SELECT payload FROM outbox WHERE topic = 'environment.pointer_moved' AND payload->>'environmentId' = ${staging.id}`;
    expect(outbox.map((o) => o.payload)).toEqual([
      expect.objectContaining({
        promotionId: p.id,
        generationId: a.artifactId,
        digest: p.artifact.digest,
        pointerSeq: "1",
      }),
    ]);
    const audit = await t.db().$queryRaw<{ kind: string }[]>`
      SELECT kind FROM audit_event WHERE org_id = ${tenant.orgId}::uuid AND kind LIKE ANY (ARRAY['environment.%', 'promotion.%']) ORDER BY seq`;
    expect(audit.map((e) => e.kind)).toEqual(["environment.created", "promotion.decided", "environment.pointer_moved"]);
    const events = await t.db().$queryRaw<{ entity: string; to_state: string }[]>`
      SELECT entity, to_state FROM transition_event WHERE org_id = ${tenant.orgId}::uuid AND entity IN ('environment', 'promotion') ORDER BY id`;
    expect(events).toEqual([
      { entity: "environment", to_state: "created" },
      { entity: "promotion", to_state: "promoted" },
      { entity: "environment", to_state: p.artifact.digest },
    ]);
  });

  it("production needs staging first, then one approval with separation of duties", async () => {
    const { tenant, admin, dev, ops } = await org();
    const staging = await createEnvironment(t.db(), admin, { repoId: tenant.repoId, name: "staging" });
    const prod = await createEnvironment(t.db(), admin, {
      repoId: tenant.repoId,
      name: "production",
      after: "staging",
    });
    expect(prod).toMatchObject({ production: true, after: "staging", failMode: "closed" });
    const a = await producedArtifact(x, tenant, { author: ops });

    const early = await promote(dev, prod.id, a.artifactId);
    expect(early.decision.verdict).toBe("override_required");
    expect(codes(early)).toContain("PREVIOUS.NOT_DEPLOYED");

    await promote(dev, staging.id, a.artifactId);
    const p = await promote(dev, prod.id, a.artifactId);
    expect([p.state, p.decision.verdict]).toEqual(["pending", "override_required"]);
    expect(codes(p)).toEqual(["OUTCOMES.OK", "PROVENANCE.OK", "PREVIOUS.OK", "APPROVALS.PENDING"]);

    // The requester, and the change's author, cannot approve; nothing is recorded for them.
    await expect(reviewPromotion(t.db(), deps, dev, { promotionId: p.id, decision: "approve" })).rejects.toMatchObject({
      code: "APPROVAL.SEPARATION_OF_DUTIES",
    });
    await expect(reviewPromotion(t.db(), deps, ops, { promotionId: p.id, decision: "approve" })).rejects.toMatchObject({
      code: "APPROVAL.SEPARATION_OF_DUTIES",
    });
    const auditor = await member(t.db(), tenant, "auditor");
    await expect(
      reviewPromotion(t.db(), deps, auditor, { promotionId: p.id, decision: "approve" }),
    ).rejects.toMatchObject({
      code: "AUTH.FORBIDDEN",
    });
    const orgToken: EnvActor = { orgId: tenant.orgId, role: "admin", userId: null, login: null, actor: "token:x" };
    await expect(
      reviewPromotion(t.db(), deps, orgToken, { promotionId: p.id, decision: "approve" }),
    ).rejects.toMatchObject({
      code: "APPROVAL.MEMBER_REQUIRED",
    });
    expect((await getPromotion(t.db(), tenant.orgId, p.id)).approvals).toEqual([]);

    const done = await reviewPromotion(t.db(), deps, admin, {
      promotionId: p.id,
      decision: "approve",
      comment: "looks good",
    });
    expect([done.state, done.decision.verdict]).toEqual(["promoted", "allow"]);
    expect(done.approvals).toEqual([
      expect.objectContaining({ login: admin.login, decision: "approve", comment: "looks good" }),
    ]);
    expect(done.artifact.digest).toBe(p.artifact.digest);
    await expect(
      reviewPromotion(t.db(), deps, admin2Of(tenant), { promotionId: p.id, decision: "approve" }),
    ).rejects.toMatchObject({
      code: "PROMOTION.NOT_PENDING",
    });
    const audit = await t.db().$queryRaw<{ kind: string }[]>`
      SELECT kind FROM audit_event WHERE subject = ${p.id} ORDER BY seq`;
    expect(audit.map((e) => e.kind)).toEqual(["promotion.decided", "promotion.approved", "promotion.decided"]);
  });

  it("a rejection ends the promotion; nothing moves", async () => {
    const { tenant, admin, dev } = await org();
    const prod = await createEnvironment(t.db(), admin, { repoId: tenant.repoId, name: "production" });
    const a = await producedArtifact(x, tenant);
    const p = await promote(dev, prod.id, a.artifactId);
    const r = await reviewPromotion(t.db(), deps, admin, {
      promotionId: p.id,
      decision: "reject",
      comment: "not today",
    });
    expect([r.state, r.decision.verdict]).toEqual(["rejected", "deny"]);
    expect(codes(r)).toContain("APPROVALS.REJECTED");
    expect(await listPointerMoves(t.db(), tenant.orgId, prod.id)).toEqual([]);
  });

  it("denies for its reason: no attestation, a quarantined artifact, a failed run, a ref outside the allowed ones", async () => {
    const { tenant, admin, dev } = await org();
    const env = await createEnvironment(t.db(), admin, { repoId: tenant.repoId, name: "qa" });
    const unattested = await producedArtifact(x, tenant, { attest: false });
    const p1 = await promote(dev, env.id, unattested.artifactId);
    expect([p1.state, p1.decision.verdict]).toEqual(["denied", "deny"]);
    expect(codes(p1)).toContain("PROVENANCE.MISSING");

    const q = await producedArtifact(x, tenant);
    const att = await t.db().$queryRaw<{ attestation_id: string }[]>`
      SELECT attestation_id FROM attestation_subject WHERE generation_id = ${q.artifactId}::uuid`;
    // What the verifier writes when stored bytes stop matching (issue 17).
    await t.db().$executeRaw`
      INSERT INTO artifact_quarantine (generation_id, org_id, run_id, job_id, attestation_id, reason, expected_sha256)
      VALUES (${q.artifactId}::uuid, ${tenant.orgId}::uuid, ${q.runId}::uuid, ${q.jobId}::uuid, ${att[0]?.attestation_id}::uuid,
              'object.digest_mismatch', ${"0".repeat(64)})`;
    const p2 = await promote(dev, env.id, q.artifactId);
    expect(p2.decision.verdict).toBe("deny");
    expect(codes(p2)).toContain("PROVENANCE.QUARANTINED");
    await expect(
      overridePromotion(t.db(), deps, admin, {
        promotionId: p2.id,
        reason: "please",
        expiresAt: new Date(Date.now() + 60_000),
      }),
    ).rejects.toMatchObject({ code: "PROMOTION.NOT_PENDING" });

    const failed = await producedArtifact(x, tenant, { testFails: true });
    const p3 = await promote(dev, env.id, failed.artifactId);
    expect([p3.state, p3.decision.verdict]).toEqual(["pending", "override_required"]);
    expect(codes(p3)).toContain("OUTCOMES.RUN_NOT_SUCCEEDED");

    await setEnvironmentPolicy(t.db(), admin, {
      environmentId: env.id,
      policy: { gates: { required_outcomes: {}, provenance: {}, allowed_refs: { patterns: ["release/*"] } } },
    });
    const main = await producedArtifact(x, tenant);
    const p4 = await promote(dev, env.id, main.artifactId);
    expect(p4.decision.policyVersion).toBe(2);
    expect(codes(p4)).toContain("REFS.NOT_ALLOWED");
    const rel = await producedArtifact(x, tenant, { ref: "refs/heads/release/1.2" });
    expect((await promote(dev, env.id, rel.artifactId)).decision.verdict).toBe("allow");
  });

  it("names the artifact by {run_id, job, artifact} as well as by id; an unknown name is not found", async () => {
    const { tenant, admin, dev } = await org();
    const env = await createEnvironment(t.db(), admin, { repoId: tenant.repoId, name: "staging" });
    const a = await producedArtifact(x, tenant);
    const p = await requestPromotion(t.db(), deps, dev, {
      environmentId: env.id,
      artifact: { runId: a.runId, job: "build", artifact: "app" },
      reason: "by name",
    });
    expect([p.state, p.artifact.id, p.artifact.jobId]).toEqual(["promoted", a.artifactId, a.jobId]);
    await expect(
      requestPromotion(t.db(), deps, dev, {
        environmentId: env.id,
        artifact: { runId: a.runId, job: "test", artifact: "app" },
        reason: "wrong job",
      }),
    ).rejects.toMatchObject({ code: "PROMOTION.ARTIFACT_NOT_FOUND" });
  });

  it("two promotions to one environment serialise: two moves in order, the second from the first's digest", async () => {
    const { tenant, admin, dev } = await org();
    const env = await createEnvironment(t.db(), admin, { repoId: tenant.repoId, name: "staging" });
    const [a, b] = [await producedArtifact(x, tenant), await producedArtifact(x, tenant)];
    const [pa, pb] = await Promise.all([promote(dev, env.id, a.artifactId), promote(admin, env.id, b.artifactId)]);
    expect([pa.state, pb.state]).toEqual(["promoted", "promoted"]);
    const moves = (await listPointerMoves(t.db(), tenant.orgId, env.id)).reverse();
    expect(moves.map((m) => m.seq)).toEqual(["1", "2"]);
    expect(moves[1]?.fromDigest).toBe(moves[0]?.toDigest);
    const second = moves[1]?.promotionId === pa.id ? pa : pb;
    expect(second.fromDigest).toBe(moves[0]?.toDigest);
  });

  it("rolls back to a digest the environment had, through the gates, the move under a second", async () => {
    const { tenant, admin, dev } = await org();
    const env = await createEnvironment(t.db(), admin, { repoId: tenant.repoId, name: "production" });
    await setEnvironmentPolicy(t.db(), admin, {
      environmentId: env.id,
      policy: { gates: { required_outcomes: {}, provenance: {} } },
    });
    const [a, b, c] = [
      await producedArtifact(x, tenant),
      await producedArtifact(x, tenant),
      await producedArtifact(x, tenant),
    ];
    await promote(dev, env.id, a.artifactId);
    await promote(dev, env.id, b.artifactId);
    await expect(
      requestRollback(t.db(), deps, dev, { environmentId: env.id, toArtifactId: c.artifactId, reason: "never there" }),
    ).rejects.toMatchObject({ code: "ROLLBACK.NOT_A_PREVIOUS_DIGEST" });
    await expect(
      requestRollback(t.db(), deps, dev, {
        environmentId: env.id,
        toArtifactId: b.artifactId,
        reason: "already there",
      }),
    ).rejects.toMatchObject({ code: "ROLLBACK.NOT_A_PREVIOUS_DIGEST" });
    const started = performance.now();
    const r = await requestRollback(t.db(), deps, dev, {
      environmentId: env.id,
      toArtifactId: a.artifactId,
      reason: "b is broken",
    });
    const ms = performance.now() - started;
    expect([r.kind, r.state]).toEqual(["rollback", "promoted"]);
    expect(ms).toBeLessThan(1000);
    const moves = await listPointerMoves(t.db(), tenant.orgId, env.id);
    expect(moves[0]).toMatchObject({ kind: "rollback", toArtifactId: a.artifactId, seq: "3" });
  });
});

function admin2Of(tenant: Tenant): EnvActor {
  return {
    orgId: tenant.orgId,
    role: "admin",
    userId: "00000000-0000-4000-8000-000000000001",
    login: "ghost",
    actor: "web:ghost",
  };
}
