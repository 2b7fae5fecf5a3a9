// Deploy runs and the deployment lock (issue 18, ADR 0033) on real PostgreSQL, s3rver and git:
// the deployer started by a pointer move (and run twice), the deploy run's frozen definition, the
// pinned artifact, the lock's serialisation and its release rules (seed 003 Q1 and Q7).
import { writeFileSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { isDomainError, type WorkflowDefinition } from "@kiln/domain";
import { describe, expect, it } from "vitest";
import { completeAttempt } from "../../src/attempts/complete-attempt.ts";
import { reconcile } from "../../src/attempts/reconcile.ts";
import { grantDownload } from "../../src/artifacts/grant-download.ts";
import { releaseDeploymentLock, setEnvironmentSecret, startDeployment } from "../../src/deployments/index.ts";
import { freezeRun } from "../../src/runs/freeze-run.ts";
import { deliverSecrets, generateKekText, KekSource, setSecret } from "../../src/secrets/index.ts";
import { retryRun } from "../../src/runs/retry-run.ts";
import { claim, claimsOf, expireLease, useS3 } from "../artifacts/support.ts";
import { def, LOCAL_SOURCE, newSession, seedFrozenRun, TEST_CFG, useTestDb } from "../support.ts";
import {
  buildIn,
  counts,
  DEPLOY,
  promote,
  seedBuild,
  seedEnvironment,
  setConfig,
  useGit,
  type Build,
} from "./support.ts";

const t = useTestDb();
const s3 = useS3();
const git = useGit();
const dir = mkdtempSync(path.join(tmpdir(), "kiln-deploy-kek-"));
writeFileSync(path.join(dir, "kek"), generateKekText(), { mode: 0o600 });
const keks = new KekSource(path.join(dir, "kek"));
const admin = (b: Build) => ({ orgId: b.tenant.orgId, role: "admin" as const, actor: "web:root" });

async function deployOf(runId: string) {
  const rows = await t.db().$queryRaw<{ state: string; run_id: string | null }[]>`
    SELECT state, run_id FROM deployment WHERE run_id = ${runId}::uuid`;
  return rows[0];
}
async function lockOf(environmentId: string) {
  return t.db().$queryRaw<
    {
      run_id: string;
      attempt_id: string | null;
      release_after: Date | null;
      manual_release: boolean;
      release_reason: string | null;
    }[]
  >`SELECT run_id, attempt_id, release_after, manual_release, release_reason FROM deployment_lock
    WHERE environment_id = ${environmentId}::uuid ORDER BY acquired_at`;
}
/** Freezes from git like the workers do; the jobs then go to the tenant's own test pool. */
async function freeze(runId: string, pool: string) {
  const r = await freezeRun(t.db(), { runId, gitCacheDir: git().cacheDir, source: LOCAL_SOURCE, finalTry: true });
  await t.db().$executeRaw`UPDATE job_run SET pool = ${pool} WHERE run_id = ${runId}::uuid`;
  return r;
}
async function started(b: Build, environmentId: string) {
  const { pointerSeq } = await promote(t.db(), b, environmentId);
  const r = await startDeployment(t.db(), { environmentId, pointerSeq });
  if (r.kind !== "started") throw new Error(`expected a start, got ${r.kind}`);
  return { ...r, pointerSeq };
}

describe("the deployer", () => {
  it("does nothing for an environment without a deploy workflow", async () => {
    const b = await seedBuild(t.db(), s3.store(), git().server);
    const env = await seedEnvironment(t.db(), b.tenant, "staging");
    const { pointerSeq } = await promote(t.db(), b, env);
    expect(await startDeployment(t.db(), { environmentId: env, pointerSeq })).toEqual({ kind: "no_deploy_workflow" });
    expect(await lockOf(env)).toEqual([]);
  });

  it("starts a deploy run at the artifact's commit under the lock; a second delivery changes nothing", async () => {
    const b = await seedBuild(t.db(), s3.store(), git().server);
    const env = await seedEnvironment(t.db(), b.tenant, "staging");
    await setConfig(t.db(), env, b.tenant.orgId);
    const { pointerSeq, promotionId } = await promote(t.db(), b, env);
    const first = await startDeployment(t.db(), { environmentId: env, pointerSeq });
    expect(first.kind).toBe("started");
    if (first.kind !== "started") return;
    const before = await counts(t.db(), b.tenant.orgId);
    expect(await startDeployment(t.db(), { environmentId: env, pointerSeq })).toEqual({
      kind: "exists",
      deploymentId: first.deploymentId,
      state: "running",
    });
    expect(await counts(t.db(), b.tenant.orgId)).toEqual(before);

    const run = await t.db().$queryRaw<
      { trigger: string; trust_class: string; commit_sha: string; workflow_path: string; status: string }[]
    >`
      SELECT trigger, trust_class, commit_sha, workflow_path, status FROM workflow_run WHERE id = ${first.runId}::uuid`;
    expect(run[0]).toEqual({
      trigger: "deploy",
      trust_class: "trusted",
      commit_sha: b.repo.headSha,
      workflow_path: ".kiln/deploy.yaml",
      status: "pending",
    });
    expect((await lockOf(env)).map((l) => [l.run_id, l.release_reason])).toEqual([[first.runId, null]]);
    const promo = await t.db().$queryRaw<
      { state: string }[]
    >`SELECT state FROM promotion WHERE id = ${promotionId}::uuid`;
    expect(promo[0]?.state).toBe("deploying");
    const audit = await t.db().$queryRaw<{ kind: string }[]>`
      SELECT kind FROM audit_event WHERE org_id = ${b.tenant.orgId}::uuid AND kind LIKE 'deployment.%' ORDER BY seq`;
    expect(audit.map((a) => a.kind)).toEqual(["deployment.lock_acquired", "deployment.started"]);
    const events = await t.db().$queryRaw<{ to_state: string; reason: string }[]>`
      SELECT to_state, reason FROM transition_event WHERE run_id = ${first.runId}::uuid AND entity = 'deployment'`;
    expect(events).toEqual([{ to_state: "running", reason: "lock_acquired" }]);
  });

  it("freezes the deploy workflow with the environment's variables and the promoted artifact pinned by id and digest", async () => {
    const b = await seedBuild(t.db(), s3.store(), git().server);
    const env = await seedEnvironment(t.db(), b.tenant, "staging");
    await setConfig(t.db(), env, b.tenant.orgId);
    await t.db().$executeRaw`
      INSERT INTO environment_variable (environment_id, org_id, name, value, updated_by)
      VALUES (${env}::uuid, ${b.tenant.orgId}::uuid, 'API_URL', 'https://staging.example', 'test')`;
    const d = await started(b, env);
    expect(await freeze(d.runId, b.tenant.pool)).toBe("frozen");
    const defs = await t.db().$queryRaw<{ definition: WorkflowDefinition }[]>`
      SELECT definition FROM workflow_run WHERE id = ${d.runId}::uuid`;
    const job = defs[0]!.definition.jobs[0]!;
    expect(job.env).toMatchObject({
      API_URL: "https://staging.example",
      REGION: "eu",
      KILN_ENVIRONMENT: "staging",
      KILN_ARTIFACT_DIGEST: `sha256:${b.digest}`,
      KILN_ARTIFACT_PATH: ".kiln/promoted/app",
    });
    expect(job.artifacts.restore).toEqual([
      {
        fromJob: "kiln.promoted",
        name: "app",
        path: ".kiln/promoted/app",
        promoted: { generationId: b.generationId, sha256: b.digest },
      },
    ]);
    const tk = (await claim(t.db(), await newSession(t.db(), b.tenant)))!;
    expect(tk.runId).toBe(d.runId);
    expect((await lockOf(env))[0]?.attempt_id).toBe(tk.attemptId);
    const grant = await grantDownload(t.db(), s3.store(), claimsOf(tk), { fromJob: "kiln.promoted", name: "app" });
    expect([grant.generationId, grant.sha256]).toEqual([b.generationId, b.digest]);
    const body = Buffer.from(await (await fetch(grant.url)).arrayBuffer());
    expect(body.length).toBe(64 * 1024);
    // The author cannot point the restore at another generation: only the pinned one is served,
    // and a pin whose digest no longer matches is refused.
    await t.db().$executeRaw`
      UPDATE workflow_run SET definition = jsonb_set(definition, '{jobs,0,artifacts,restore,0,promoted,sha256}', to_jsonb(${"0".repeat(64)}::text))
      WHERE id = ${d.runId}::uuid`;
    await expect(
      grantDownload(t.db(), s3.store(), claimsOf(tk), { fromJob: "kiln.promoted", name: "app" }),
    ).rejects.toMatchObject({
      code: "ARTIFACT.VERIFICATION_FAILED",
    });
  });

  it("delivers an environment's secrets to its own deploy runs only", async () => {
    const b = await seedBuild(t.db(), s3.store(), git().server);
    const staging = await seedEnvironment(t.db(), b.tenant, "staging");
    const prod = await seedEnvironment(t.db(), b.tenant, "prod-eu");
    await setConfig(t.db(), staging, b.tenant.orgId);
    await setSecret(t.db(), keks, {
      target: { orgId: b.tenant.orgId, repoId: b.tenant.repoId, scope: `repo:${b.tenant.repoId}` },
      name: "DEPLOY_KEY",
      value: "repo-value",
      actor: "test",
    });
    await setEnvironmentSecret(t.db(), keks, admin(b), staging, { name: "DEPLOY_KEY", value: "staging-value" });
    await setEnvironmentSecret(t.db(), keks, admin(b), prod, { name: "DEPLOY_KEY", value: "prod-value" });
    const d = await started(b, staging);
    expect(await freeze(d.runId, b.tenant.pool)).toBe("frozen");
    const tk = (await claim(t.db(), await newSession(t.db(), b.tenant)))!;
    const got = await deliverSecrets(t.db(), keks, claimsOf(tk), { epoch: tk.epoch });
    expect(got.delivered.map((s) => [s.name, s.value])).toEqual([["DEPLOY_KEY", "staging-value"]]);
    // A branch build of the same repo declaring the same name gets the repo's, never an environment's.
    await seedFrozenRun(t.db(), b.tenant, def(DEPLOY));
    const branch = (await claim(t.db(), await newSession(t.db(), b.tenant)))!;
    expect(branch.runId).not.toBe(d.runId);
    const plain = await deliverSecrets(t.db(), keks, claimsOf(branch), { epoch: branch.epoch });
    expect(plain.delivered.map((s) => [s.name, s.value])).toEqual([["DEPLOY_KEY", "repo-value"]]);
  });
});

describe("the deployment lock", () => {
  it("serialises: a second promotion waits, a third supersedes it, release starts the newest", async () => {
    const b = await seedBuild(t.db(), s3.store(), git().server);
    const env = await seedEnvironment(t.db(), b.tenant, "staging");
    await setConfig(t.db(), env, b.tenant.orgId);
    const first = await started(b, env);
    const b2 = await buildIn(t.db(), s3.store(), b.tenant, b.repo, 2);
    const m2 = await promote(t.db(), b2, env);
    const w2 = await startDeployment(t.db(), { environmentId: env, pointerSeq: m2.pointerSeq });
    expect(w2).toMatchObject({ kind: "waiting", heldByRunId: first.runId });
    const b3 = await buildIn(t.db(), s3.store(), b.tenant, b.repo, 3);
    const m3 = await promote(t.db(), b3, env);
    const w3 = await startDeployment(t.db(), { environmentId: env, pointerSeq: m3.pointerSeq });
    expect(w3.kind).toBe("waiting");
    const states = await t.db().$queryRaw<{ pointer_seq: bigint; state: string }[]>`
      SELECT pointer_seq, state FROM deployment WHERE environment_id = ${env}::uuid ORDER BY pointer_seq`;
    expect(states.map((s) => s.state)).toEqual(["running", "superseded", "waiting"]);

    expect(await freeze(first.runId, b.tenant.pool)).toBe("frozen");
    const tk = (await claim(t.db(), await newSession(t.db(), b.tenant)))!;
    // Still running: the reconciler holds the lock.
    await reconcile(t.db(), TEST_CFG);
    expect((await lockOf(env)).filter((l) => l.release_reason === null)).toHaveLength(1);
    await completeAttempt(t.db(), TEST_CFG, { ...claimsOf(tk), outcome: "success", sandboxDestroyed: true });
    const r = await reconcile(t.db(), TEST_CFG);
    expect(r.locksReleased).toBe(1);
    const locks = await lockOf(env);
    expect(locks.map((l) => l.release_reason)).toEqual(["attempts_stopped", null]);
    expect(await deployOf(first.runId)).toMatchObject({ state: "succeeded" });
    const next = await t.db().$queryRaw<{ state: string; run_id: string }[]>`
      SELECT state, run_id FROM deployment WHERE environment_id = ${env}::uuid AND pointer_seq = ${m3.pointerSeq}`;
    expect(next[0]?.state).toBe("running");
    expect(locks[1]?.run_id).toBe(next[0]?.run_id);
    // Running the sweep again changes nothing.
    const before = await counts(t.db(), b.tenant.orgId);
    expect((await reconcile(t.db(), TEST_CFG)).locksReleased).toBe(0);
    expect(await counts(t.db(), b.tenant.orgId)).toEqual(before);
  });

  it("a silent deploy attempt fails without a retry and holds the lock until lease + skew bound", async () => {
    // Wide enough that a slow pass on a loaded machine still sees the bound ahead of it.
    const cfg = { ...TEST_CFG, clockSkewBoundMs: 5_000, retryBudget: 2 };
    const b = await seedBuild(t.db(), s3.store(), git().server);
    const env = await seedEnvironment(t.db(), b.tenant, "staging");
    await setConfig(t.db(), env, b.tenant.orgId);
    const d = await started(b, env);
    expect(await freeze(d.runId, b.tenant.pool)).toBe("frozen");
    const tk = (await claim(t.db(), await newSession(t.db(), b.tenant)))!;
    await expireLease(t.db(), tk.attemptId); // lease ran out 1 s ago: the kill bound is 4 s away
    await reconcile(t.db(), cfg);
    const job = await t.db().$queryRaw<{ status: string; outcome: string; cause: string; platform_retries: number }[]>`
      SELECT status, outcome, cause, platform_retries FROM job_run WHERE run_id = ${d.runId}::uuid`;
    expect(job[0]).toEqual({
      status: "completed",
      outcome: "platform_failure",
      cause: "lease.expired",
      platform_retries: 0,
    });
    const held = await lockOf(env);
    expect(held[0]?.release_reason).toBeNull();
    expect(held[0]?.release_after).not.toBeNull();
    expect(await deployOf(d.runId)).toMatchObject({ state: "failed" });
    // Nobody may release it early: Kiln will, at the bound.
    await expect(releaseDeploymentLock(t.db(), cfg, admin(b), env, "hurry")).rejects.toMatchObject({
      code: "DEPLOY.LOCK_RELEASE_REFUSED",
    });
    // Nor can the deploy run be retried by hand around the lock.
    const caller = { tokenId: b.tenant.tokenId, orgId: b.tenant.orgId, role: "member" as const, name: "alice" };
    await expect(retryRun(t.db(), { caller, runId: d.runId })).rejects.toMatchObject({
      code: "RUN.ILLEGAL_TRANSITION",
    });
    const releaseAt = held[0]!.release_after!.getTime();
    await new Promise((r) => setTimeout(r, Math.max(0, releaseAt - Date.now()) + 300));
    expect((await reconcile(t.db(), cfg)).locksReleased).toBe(1);
    expect((await lockOf(env))[0]?.release_reason).toBe("kill_bound_elapsed");
  });

  it("on a host Kiln does not control, only an admin releases the lock, audited", async () => {
    const cfg = { ...TEST_CFG, clockSkewBoundMs: 0 };
    const b = await seedBuild(t.db(), s3.store(), git().server);
    const env = await seedEnvironment(t.db(), b.tenant, "staging");
    await setConfig(t.db(), env, b.tenant.orgId);
    const d = await started(b, env);
    expect(await freeze(d.runId, b.tenant.pool)).toBe("frozen");
    // The tenant's host credential belongs to the org: an org-owned host.
    await t.db()
      .$executeRaw`UPDATE agent_token SET org_id = ${b.tenant.orgId}::uuid WHERE id = ${b.tenant.agentTokenId}::uuid`;
    const tk = (await claim(t.db(), await newSession(t.db(), b.tenant)))!;
    await expireLease(t.db(), tk.attemptId);
    await reconcile(t.db(), cfg);
    await reconcile(t.db(), cfg);
    const held = await lockOf(env);
    expect(held.map((l) => [l.manual_release, l.release_reason])).toEqual([[true, null]]);
    const member = { ...admin(b), role: "member" as const };
    await expect(releaseDeploymentLock(t.db(), cfg, member, env, "x")).rejects.toMatchObject({
      code: "AUTH.FORBIDDEN",
    });
    const other = await seedBuild(t.db(), s3.store(), git().server, 9);
    await expect(releaseDeploymentLock(t.db(), cfg, admin(other), env, "x")).rejects.toSatisfy(
      (e: unknown) => isDomainError(e) && e.code === "ENV.NOT_FOUND",
    );
    await releaseDeploymentLock(t.db(), cfg, admin(b), env, "host rebooted by ops");
    expect((await lockOf(env))[0]?.release_reason).toBe("manual");
    const audit = await t.db().$queryRaw<{ actor: string; data: { comment: string } }[]>`
      SELECT actor, data FROM audit_event WHERE org_id = ${b.tenant.orgId}::uuid AND kind = 'deployment.lock_released'`;
    expect(audit.map((a) => [a.actor, a.data.comment])).toEqual([["web:root", "host rebooted by ops"]]);
  });
});
