// The attestation bench's fixtures: one org, repo, pool and agent session, and jobs claimed through
// the real claim with two sealed generations each, as the finaliser leaves them (the bytes' path is
// benchmarked in bench/artifacts). Completing them (completeAttempt) queues their attestation.
import { randomUUID } from "node:crypto";
import { withTx, type Db } from "@kiln/db";
import { parseWorkflow } from "@kiln/domain";
import {
  addRepo,
  claimJob,
  completeAttempt,
  createAgentToken,
  createJobs,
  createOrg,
  DEFAULT_ENGINE_CONFIG,
  registerSession,
  setPoolPolicy,
  type JobTicket,
} from "@kiln/engine";

const CFG = { ...DEFAULT_ENGINE_CONFIG, leaseTtlMs: 3_600_000 };
const WORKFLOW = `version: 1
jobs:
  - name: compile
    steps: ["true"]
    artifacts: {publish: [{name: app, path: app.bin}, {name: sbom, path: sbom.json}]}
`;

export interface BenchTenant {
  orgId: string;
  repoId: string;
  sessionId: string;
}

export async function seedTenant(db: Db): Promise<BenchTenant> {
  const org = await createOrg(db, "bench");
  const repo = await addRepo(
    db,
    {
      orgSlug: "bench",
      name: "bench/app",
      cloneUrl: "file:///none",
      webhookSecret: "bench-secret",
      workflowPath: ".kiln/workflow.yaml",
    },
    { localReposRoot: "/" },
  );
  await setPoolPolicy(db, { name: "bench", minIsolation: "process", development: true, actor: "bench" });
  const token = await createAgentToken(db, { pool: "bench" });
  const session = await registerSession(db, CFG, {
    agentTokenId: token.id,
    pool: "bench",
    body: {
      hostname: "bench",
      capacity: 1_000_000,
      labels: { os: "linux", arch: "x64", resource_class: "small", isolation: "process" },
    },
  });
  return { orgId: org.id, repoId: repo.id, sessionId: session.sessionId };
}

async function seedOne(db: Db, ctx: BenchTenant): Promise<JobTicket> {
  const parsed = parseWorkflow(WORKFLOW);
  if (!parsed.ok) throw new Error(parsed.error.message);
  const def = parsed.definition;
  await withTx(db, "bench-run", async (tx) => {
    const r = await tx.$queryRaw<{ id: string }[]>`
      INSERT INTO workflow_run (org_id, repo_id, status, trust_class, trigger, ref, commit_sha, workflow_path, workflow_hash, definition, inputs)
      VALUES (${ctx.orgId}::uuid, ${ctx.repoId}::uuid, 'running', 'trusted', 'manual', 'refs/heads/main', ${"b".repeat(40)},
              '.kiln/workflow.yaml', ${"c".repeat(64)}, ${JSON.stringify(def)}::jsonb, '{}'::jsonb) RETURNING id`;
    await createJobs(tx, { id: r[0]!.id, orgId: ctx.orgId }, def, "bench");
  });
  // Concurrent seeders' claims skip the job another one has locked (SKIP LOCKED) and may find
  // none for a moment; every seeded job is claimed by someone, so asking again is enough.
  let c = await claimJob(db, CFG, { sessionId: ctx.sessionId, claimRequestId: randomUUID() });
  for (let i = 0; c.kind !== "claimed" && i < 50; i++) {
    await new Promise((r) => setTimeout(r, 5));
    c = await claimJob(db, CFG, { sessionId: ctx.sessionId, claimRequestId: randomUUID() });
  }
  if (c.kind !== "claimed") throw new Error(`claim: ${c.kind}`);
  for (const name of ["app", "sbom"])
    await db.$executeRaw`
      INSERT INTO artifact_generation (attempt_id, job_id, run_id, org_id, epoch, name, object_key, size_bytes, sha256, state, sealed_at)
      VALUES (${c.ticket.attemptId}::uuid, ${c.ticket.jobId}::uuid, ${c.ticket.runId}::uuid, ${ctx.orgId}::uuid, ${c.ticket.epoch}, ${name},
              ${`bench/${randomUUID()}`}, 1024, encode(sha256(${randomUUID()}::bytea), 'hex'), 'sealed', now())`;
  return c.ticket;
}

/** `n` claimed jobs with sealed generations, seeded by 4 concurrent seeders. */
export async function seedJobs(db: Db, ctx: BenchTenant, n: number): Promise<JobTicket[]> {
  const out: JobTicket[] = [];
  await pool(
    Array.from({ length: n }, (_, i) => i),
    4,
    async () => out.push(await seedOne(db, ctx)),
  );
  return out;
}

export const complete = (db: Db, t: JobTicket) =>
  completeAttempt(db, CFG, {
    attemptId: t.attemptId,
    jobId: t.jobId,
    epoch: t.epoch,
    outcome: "success",
    sandboxDestroyed: true,
  });

/** Runs `fn` over `items` with `n` in flight. */
export async function pool<T>(items: T[], n: number, fn: (x: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: n }, async () => {
      while (next < items.length) await fn(items[next++] as T);
    }),
  );
}
