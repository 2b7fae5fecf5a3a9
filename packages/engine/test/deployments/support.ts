// Test support for deploy runs (issue 18): a build whose job bound a real artifact (s3rver), an
// environment with its first policy version, and a promotion whose pointer move is env-core's
// movePointer, exactly as the promotion use case makes it.
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { withTx, type Db } from "@kiln/db";
import { startGitServer, type TestGitRepo, type TestGitServer } from "@kiln/testkit";
import { afterAll, beforeAll } from "vitest";
import { completeAttempt } from "../../src/attempts/complete-attempt.ts";
import type { ArtifactStore } from "../../src/artifacts/index.ts";
import { movePointer } from "../../src/environments/index.ts";
import { bytes, claim, claimsOf, publish, sha256 } from "../artifacts/support.ts";
import { def, newSession, seedFrozenRun, seedTenant, TEST_CFG, type Tenant } from "../support.ts";

export const BUILD = `version: 1
jobs:
  - name: build
    steps: [make]
    artifacts:
      publish:
        - {name: app, path: out/app.tar}
`;
export const DEPLOY = `version: 1
jobs:
  - name: deploy
    env: {API_URL: from-the-file, REGION: eu}
    secrets: [DEPLOY_KEY]
    steps: ["./deploy.sh"]
`;

export function useGit(): () => { server: TestGitServer; cacheDir: string } {
  let server: TestGitServer | null = null;
  let root = "";
  let cacheDir = "";
  beforeAll(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), "kiln-git-"));
    cacheDir = await mkdtemp(path.join(os.tmpdir(), "kiln-gitcache-"));
    server = await startGitServer({ rootDir: root });
  });
  afterAll(async () => {
    await server?.stop();
    await rm(root, { recursive: true, force: true });
    await rm(cacheDir, { recursive: true, force: true });
  });
  return () => {
    if (!server) throw new Error("git server not ready");
    return { server, cacheDir };
  };
}

export interface Build {
  tenant: Tenant;
  repo: TestGitRepo;
  runId: string;
  jobId: string;
  generationId: string;
  digest: string;
}

/** A trusted build at the repo's head whose `build` job bound artifact `app`. */
export async function seedBuild(db: Db, store: ArtifactStore, git: TestGitServer, seed = 1): Promise<Build> {
  const tenant = await seedTenant(db);
  const repo = await git.createRepo(`${tenant.slug}.git`, {
    ".kiln/workflow.yaml": BUILD,
    ".kiln/deploy.yaml": DEPLOY,
  });
  await db.$executeRaw`UPDATE repo SET clone_url = ${repo.cloneUrl} WHERE id = ${tenant.repoId}::uuid`;
  return buildIn(db, store, tenant, repo, seed);
}

export async function buildIn(
  db: Db,
  store: ArtifactStore,
  tenant: Tenant,
  repo: TestGitRepo,
  seed: number,
): Promise<Build> {
  const runId = await seedFrozenRun(db, tenant, def(BUILD));
  await db.$executeRaw`UPDATE workflow_run SET commit_sha = ${repo.headSha} WHERE id = ${runId}::uuid`;
  const s = await newSession(db, tenant);
  const tk = await claim(db, s);
  if (!tk || tk.runId !== runId) throw new Error("build job not claimed");
  const data = bytes(64 * 1024, seed);
  const generationId = await publish(db, store, tk, "app", data);
  await completeAttempt(db, TEST_CFG, { ...claimsOf(tk), outcome: "success", sandboxDestroyed: true });
  return { tenant, repo, runId, jobId: tk.jobId, generationId, digest: sha256(data) };
}

export async function seedEnvironment(db: Db, t: Tenant, name: string): Promise<string> {
  return withTx(db, "seed-environment", async (tx) => {
    const rows = await tx.$queryRaw<{ id: string }[]>`
      INSERT INTO environment (org_id, repo_id, name, position, policy_version, created_by, production)
      VALUES (${t.orgId}::uuid, ${t.repoId}::uuid, ${name}, 0, 1, 'test', ${name === "production"}) RETURNING id`;
    const id = rows[0]?.id ?? "";
    await tx.$executeRaw`
      INSERT INTO environment_policy (environment_id, version, org_id, policy, created_by)
      VALUES (${id}::uuid, 1, ${t.orgId}::uuid, '{}'::jsonb, 'test')`;
    return id;
  });
}

/** An allowed promotion and its pointer move, in one transaction (what env-core's use case does). */
export async function promote(
  db: Db,
  b: Build,
  environmentId: string,
): Promise<{ promotionId: string; pointerSeq: bigint }> {
  return withTx(db, "seed-promotion", async (tx) => {
    const env = await tx.$queryRaw<{ pointer_seq: bigint }[]>`
      SELECT pointer_seq FROM environment WHERE id = ${environmentId}::uuid FOR UPDATE`;
    const rows = await tx.$queryRaw<{ id: string }[]>`
      INSERT INTO promotion (org_id, repo_id, environment_id, kind, requested_by, reason, generation_id, digest, run_id, job_id,
                             artifact_name, state, verdict, fail_mode, policy_version, decided_at, promoted_at)
      VALUES (${b.tenant.orgId}::uuid, ${b.tenant.repoId}::uuid, ${environmentId}::uuid, 'promote', 'web:alice', 'ship it',
              ${b.generationId}::uuid, ${b.digest}, ${b.runId}::uuid, ${b.jobId}::uuid, 'app', 'promoted', 'allow', 'closed', 1,
              now(), now())
      RETURNING id`;
    const promotionId = rows[0]?.id ?? "";
    const moved = await movePointer(tx, {
      orgId: b.tenant.orgId,
      environmentId,
      promotionId,
      kind: "promote",
      generationId: b.generationId,
      digest: b.digest,
      attestationId: null,
      expectedSeq: env[0]?.pointer_seq ?? 0n,
      actor: "web:alice",
    });
    return { promotionId, pointerSeq: moved.pointerSeq };
  });
}

export async function setConfig(
  db: Db,
  environmentId: string,
  orgId: string,
  workflowPath = ".kiln/deploy.yaml",
): Promise<void> {
  await db.$executeRaw`
    INSERT INTO environment_deploy_config (environment_id, org_id, workflow_path, updated_by)
    VALUES (${environmentId}::uuid, ${orgId}::uuid, ${workflowPath}, 'test')`;
}

export async function counts(
  db: Db,
  orgId: string,
): Promise<{ audit: number; events: number; outbox: number; runs: number }> {
  const r = await db.$queryRaw<{ audit: bigint; events: bigint; outbox: bigint; runs: bigint }[]>`
    SELECT (SELECT count(*) FROM audit_event WHERE org_id = ${orgId}::uuid) AS audit,
           (SELECT count(*) FROM transition_event WHERE org_id = ${orgId}::uuid) AS events,
           (SELECT count(*) FROM outbox) AS outbox,
           (SELECT count(*) FROM workflow_run WHERE org_id = ${orgId}::uuid) AS runs`;
  const c = r[0];
  return { audit: Number(c?.audit), events: Number(c?.events), outbox: Number(c?.outbox), runs: Number(c?.runs) };
}
