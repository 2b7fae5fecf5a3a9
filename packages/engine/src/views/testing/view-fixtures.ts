// Test-only helpers for the view tests: a cloned database and compact fixtures written with SQL, so
// thousands of runs cost one statement instead of thousands of use-case calls.
import { createDb, type Db } from "@kiln/db";
import type { Role } from "@kiln/domain";
import { cloneDatabase, dropDatabase, uniqueDatabaseName } from "@kiln/testkit";
import { afterAll, beforeAll, inject } from "vitest";
import { addMember, addRepo, createOrg } from "../../tenants/index.ts";
import { resolveTenant, type TenantScope } from "../tenants/resolve-tenant.ts";

export function useViewDb(): () => Db {
  let db: Db | null = null;
  const name = uniqueDatabaseName("views");
  beforeAll(async () => {
    db = createDb({ url: await cloneDatabase(inject("pgServerUrl"), inject("pgTemplate"), name), max: 10 });
  });
  afterAll(async () => {
    await db?.$disconnect();
    await dropDatabase(inject("pgServerUrl"), name);
  });
  return () => {
    if (!db) throw new Error("test database not ready");
    return db;
  };
}

export interface Org {
  slug: string;
  orgId: string;
  repoId: string;
  userId: string;
  login: string;
  scope: TenantScope;
}

/** An org with one repo and one user of the given role, and that user's resolved scope. */
export async function seedOrg(db: Db, slug: string, role: Role = "member"): Promise<Org> {
  const org = await createOrg(db, slug);
  const repo = await addRepo(db, {
    orgSlug: slug,
    name: `${slug}/app`,
    cloneUrl: `https://git.example.invalid/${slug}/app.git`, // never fetched: views read rows only
    webhookSecret: "s3cret-value",
    workflowPath: ".kiln/workflow.yaml",
  });
  const login = `${slug}-${role}`;
  const { userId } = await addMember(db, { orgSlug: slug, login, role });
  const scope = await resolveTenant(db, { userId, login, orgSlug: slug, roles: [role] });
  return { slug, orgId: org.id, repoId: repo.id, userId, login, scope };
}

/**
 * `n` completed runs, one second apart ending now, alternating refs and triggers, with `jobsPerRun`
 * jobs (and one attempt each) per run; every 50th run is a platform failure and every 7th a user
 * failure, so filters have something to find.
 */
export async function seedRuns(db: Db, org: Org, n: number, jobsPerRun = 0): Promise<void> {
  await db.$executeRaw`
    INSERT INTO workflow_run (org_id, repo_id, status, outcome, trust_class, trigger, actor, ref, commit_sha, workflow_path, inputs, created_at, finished_at)
    SELECT ${org.orgId}::uuid, ${org.repoId}::uuid, 'completed',
           CASE WHEN g % 50 = 0 THEN 'platform_failure' WHEN g % 7 = 0 THEN 'user_failure' ELSE 'success' END,
           'trusted', (ARRAY['push','pull_request','manual','retry'])[1 + g % 4], 'dev',
           CASE WHEN g % 3 = 0 THEN 'refs/heads/feature' ELSE 'refs/heads/main' END,
           repeat('a', 40), '.kiln/workflow.yaml', '{}'::jsonb,
           now() - make_interval(secs => ${n} - g), now() - make_interval(secs => ${n} - g) + interval '30 seconds'
    FROM generate_series(1, ${n}) g`;
  if (jobsPerRun > 0) {
    await db.$executeRaw`
      INSERT INTO job_run (run_id, org_id, job_index, name, needs, pool, status, outcome, created_at, finished_at)
      SELECT r.id, r.org_id, k, 'job-' || k, '{}'::int[], 'default', 'completed', r.outcome, r.created_at, r.finished_at
      FROM workflow_run r CROSS JOIN generate_series(0, ${jobsPerRun - 1}) k
      WHERE r.org_id = ${org.orgId}::uuid`;
    await db.$executeRaw`
      INSERT INTO attempt (job_id, run_id, org_id, epoch, session_id, claim_request_id, host, status, outcome, lease_expires_at,
                           queued_ms, image_ms, dispatch_ms, execution_ms, finalize_ms, claimed_at, started_at, finished_at)
      SELECT j.id, j.run_id, j.org_id, 1, gen_random_uuid(), gen_random_uuid()::text, 'host-1', 'completed', j.outcome, j.finished_at,
             100, 200, 50, 20000, 300, j.created_at, j.created_at, j.finished_at
      FROM job_run j WHERE j.org_id = ${org.orgId}::uuid`;
  }
  await db.$executeRawUnsafe("ANALYZE workflow_run, job_run, attempt");
}
