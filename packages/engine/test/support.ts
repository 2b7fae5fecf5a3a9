import { randomBytes } from "node:crypto";
import { createDb, withTx, type Db } from "@kiln/db";
import { parseWorkflow, type WorkflowDefinition } from "@kiln/domain";
import { cloneDatabase, dropDatabase, uniqueDatabaseName } from "@kiln/testkit";
import { afterAll, beforeAll, inject } from "vitest";
import { DEFAULT_ENGINE_CONFIG, type EngineConfig } from "../src/config/engine-config.ts";
import { addMember, addRepo, createAgentToken, createApiToken, createOrg } from "../src/tenants/index.ts";
import { registerSession } from "../src/dispatch/register-session.ts";
import { setPoolPolicy } from "../src/dispatch/pool-policy.ts";
import { createJobs } from "../src/runs/freeze-run.ts";
import { bindJobTokenKek } from "../src/identity/job-token-keys.ts";
import { kekFromBytes } from "../src/identity/identity-kek.ts";

export const TEST_CFG: EngineConfig = {
  ...DEFAULT_ENGINE_CONFIG,
  leaseTtlMs: 60_000,
  backoffBaseMs: 0,
  backoffMaxMs: 0,
};

/** A fresh database cloned from the migrated template for this test file. */
export function useTestDb(): { db: () => Db; url: () => string } {
  let db: Db | null = null;
  let url = "";
  const name = uniqueDatabaseName("engine");
  beforeAll(async () => {
    url = await cloneDatabase(inject("pgServerUrl"), inject("pgTemplate"), name);
    db = createDb({ url, max: 12 });
    // As the web app does at boot: job-token keys are sealed under an identity KEK (issue 28).
    bindJobTokenKek(db, kekFromBytes(randomBytes(32)));
  });
  afterAll(async () => {
    await db?.$disconnect();
    await dropDatabase(inject("pgServerUrl"), name);
  });
  return {
    db: () => {
      if (!db) throw new Error("test database not ready");
      return db;
    },
    url: () => url,
  };
}

export interface Tenant {
  orgId: string;
  slug: string;
  repoId: string;
  repoName: string;
  token: string;
  tokenId: string;
  agentTokenId: string;
  /** Each tenant gets its own pool so test files and cases never claim each other's jobs. */
  pool: string;
}

/** Tests use local repositories (file://, the loopback git server), as `npm run up` enables them. */
export const LOCAL_SOURCE = { localReposRoot: "/" };

let seq = 0;
export async function seedTenant(
  db: Db,
  opts: { cloneUrl?: string; secret?: string; member?: string; forgeId?: number } = {},
): Promise<Tenant> {
  const slug = `org-${process.pid}-${++seq}-${Math.random().toString(36).slice(2, 7)}`;
  const org = await createOrg(db, slug);
  const repoName = `${slug}/app`;
  const repo = await addRepo(
    db,
    {
      orgSlug: slug,
      name: repoName,
      cloneUrl: opts.cloneUrl ?? "file:///nonexistent",
      webhookSecret: opts.secret ?? "s3cret-value",
      workflowPath: ".kiln/workflow.yaml",
    },
    LOCAL_SOURCE,
  );
  if (opts.member)
    await addMember(db, { orgSlug: slug, login: opts.member, role: "member", forgeId: opts.forgeId ?? null });
  const tok = await createApiToken(db, { orgSlug: slug, role: "member" });
  const pool = `p${seq}-${Math.random().toString(36).slice(2, 8)}`;
  // Process-driver sessions in a pool of their own: a development pool, as `npm run up` configures
  // (docs/adr/0022); placement tests configure their own pools.
  await setPoolPolicy(db, { name: pool, minIsolation: "process", development: true, actor: "test" });
  const agent = await createAgentToken(db, { pool });
  return {
    orgId: org.id,
    slug,
    repoId: repo.id,
    repoName,
    token: tok.token,
    tokenId: tok.id,
    agentTokenId: agent.id,
    pool,
  };
}

/** A session of the tenant's host; untrusted work needs `microvm` (docs/adr/0022), trusted work runs on either. */
export async function newSession(
  db: Db,
  t: Tenant,
  capacity = 100,
  hostname = "host",
  isolation: "process" | "microvm" = "process",
): Promise<string> {
  const s = await registerSession(db, TEST_CFG, {
    agentTokenId: t.agentTokenId,
    pool: t.pool,
    body: { hostname, capacity, labels: { os: "linux", arch: "x64", resource_class: "small", isolation } },
  });
  return s.sessionId;
}

export function def(yaml: string): WorkflowDefinition {
  const r = parseWorkflow(yaml);
  if (!r.ok) throw new Error(r.error.message);
  return r.definition;
}

/** A run that is already frozen (skips git): status running, jobs created, roots READY. */
export async function seedFrozenRun(
  db: Db,
  t: Tenant,
  definition: WorkflowDefinition,
  trust = "trusted",
  /** The run's ref: it namespaces the trusted caches the run reads and writes. */
  ref = "refs/heads/main",
): Promise<string> {
  return withTx(db, "seed-run", async (tx) => {
    const rows = await tx.$queryRaw<{ id: string }[]>`
      INSERT INTO workflow_run (org_id, repo_id, status, trust_class, trigger, ref, commit_sha, workflow_path, workflow_hash, definition, inputs)
      VALUES (${t.orgId}::uuid, ${t.repoId}::uuid, 'running', ${trust}, 'manual', ${ref}, ${"a".repeat(40)}, '.kiln/workflow.yaml', 'hash',
              ${JSON.stringify(definition)}::jsonb, '{}'::jsonb) RETURNING id`;
    const id = rows[0]?.id ?? "";
    await createJobs(tx, { id, orgId: t.orgId }, definition, t.pool);
    return id;
  });
}

export const ONE_JOB = `version: 1
jobs:
  - name: build
    steps: [echo hi]
`;
export const TWO_JOBS = `version: 1
jobs:
  - name: compile
    steps: [make]
  - name: test
    steps: [make test]
`;

export async function runStatus(
  db: Db,
  runId: string,
): Promise<{ status: string; outcome: string | null; cause: string | null }> {
  const r = await db.$queryRaw<{ status: string; outcome: string | null; cause: string | null }[]>`
    SELECT status, outcome, cause FROM workflow_run WHERE id = ${runId}::uuid`;
  if (!r[0]) throw new Error("no run");
  return r[0];
}
