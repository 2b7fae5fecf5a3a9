import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import {
  claimJob,
  completeAttempt,
  createAgentToken,
  setPoolPolicy,
  createOrg,
  engineConfigFromEnv,
  engineEnvSchema,
  registerSession,
} from "@kiln/engine";
import { parseWorkflow } from "@kiln/domain";
import { cloneDatabase, dropDatabase, uniqueDatabaseName } from "@kiln/testkit";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { services } from "./context.ts";
import { parseWebEnv, webEngineConfig } from "./env.ts";

// The web app's engine config comes from the engine's one env schema and mapping. Web once built it
// by hand without the backoff settings, so retries scheduled on the completion path (which runs
// here) ignored KILN_BACKOFF_BASE_MS/KILN_BACKOFF_MAX_MS while the workers honoured them.

const VARIED: Record<string, string> = {
  DATABASE_URL: "postgres://unused",
  KILN_LEASE_TTL_MS: "4000",
  KILN_HEARTBEAT_MS: "900",
  KILN_RETRY_BUDGET: "5",
  KILN_BACKOFF_BASE_MS: "1234",
  KILN_BACKOFF_MAX_MS: "98765",
  KILN_DISPATCH_POLICY: "fifo",
  KILN_DISPATCH_VIEW_MS: "50",
  S3_ENDPOINT: "http://127.0.0.1:4568",
};

const parsed = parseWorkflow("version: 1\njobs:\n  - name: build\n    steps: [echo hi]\n");
if (!parsed.ok) throw new Error(parsed.error.message);
const ONE_JOB = parsed.definition;

describe("web engine config", () => {
  it("is the engine's mapping of the engine's schema, for defaults and for every variable set", () => {
    for (const record of [{ DATABASE_URL: "postgres://unused" }, VARIED]) {
      expect(webEngineConfig(parseWebEnv(record))).toEqual(engineConfigFromEnv(engineEnvSchema.parse(record)));
    }
  });

  it("honours the backoff settings (and every other engine variable)", () => {
    expect(webEngineConfig(parseWebEnv(VARIED))).toMatchObject({
      leaseTtlMs: 4000,
      heartbeatMs: 900,
      retryBudget: 5,
      backoffBaseMs: 1234,
      backoffMaxMs: 98765,
      dispatchPolicy: "fifo",
      dispatchViewMs: 50,
      redispatchAfterMs: 4000,
    });
  });
});

describe("the web completion path", () => {
  const dbName = uniqueDatabaseName("web_backoff");
  let kekDir = "";
  const saved: Record<string, string | undefined> = {};
  const setEnv = (vars: Record<string, string>) => {
    for (const [k, v] of Object.entries(vars)) {
      saved[k] = process.env[k];
      process.env[k] = v;
    }
  };

  beforeAll(async () => {
    const url = await cloneDatabase(inject("pgServerUrl"), inject("pgTemplate"), dbName);
    kekDir = await mkdtemp(path.join(os.tmpdir(), "kiln-web-kek-"));
    // services() parses process.env on first use, exactly as in the server: base 400 s, cap 300 s.
    // The claim signs with job-token keys sealed under the identity KEK the context binds (issue 28).
    setEnv({
      DATABASE_URL: url,
      KILN_BACKOFF_BASE_MS: "400000",
      KILN_BACKOFF_MAX_MS: "300000",
      KILN_DB_POOL: "4",
      KILN_IDENTITY_KEK_FILE: path.join(kekDir, "identity-kek"),
    });
  });

  afterAll(async () => {
    const g = globalThis as unknown as { __kiln?: ReturnType<typeof services> };
    if (g.__kiln) {
      await (await g.__kiln.boss).stop({ graceful: false, close: true }).catch(() => undefined);
      await g.__kiln.db.$disconnect();
      delete g.__kiln;
    }
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    await dropDatabase(inject("pgServerUrl"), dbName);
    await rm(kekDir, { recursive: true, force: true });
  });

  it("schedules a platform-failure retry with KILN_BACKOFF_BASE_MS/KILN_BACKOFF_MAX_MS", async () => {
    const { db, cfg } = services();
    expect(cfg).toMatchObject({ backoffBaseMs: 400_000, backoffMaxMs: 300_000 });

    const org = await createOrg(db, `backoff-${randomUUID().slice(0, 8)}`);
    const pool = "backoff-pool";
    await setPoolPolicy(db, { name: pool, minIsolation: "process", development: true, actor: "test" });
    const agent = await createAgentToken(db, { pool });
    const repo = await db.$queryRaw<{ id: string }[]>`
      INSERT INTO repo (org_id, full_name, clone_url, webhook_secret, workflow_path)
      VALUES (${org.id}::uuid, ${`${org.slug}/app`}, 'https://git.invalid/app.git', 's3cret-value', '.kiln/workflow.yaml')
      RETURNING id`;
    // A frozen run with one READY job, as freezing leaves it (the engine's createJobs shape).
    const run = await db.$queryRaw<{ id: string }[]>`
      INSERT INTO workflow_run (org_id, repo_id, status, trust_class, trigger, commit_sha, workflow_path, workflow_hash, definition, inputs)
      VALUES (${org.id}::uuid, ${repo[0]?.id}::uuid, 'running', 'trusted', 'manual', ${"a".repeat(40)}, '.kiln/workflow.yaml',
              'hash', ${JSON.stringify(ONE_JOB)}::jsonb,
              '{}'::jsonb)
      RETURNING id`;
    await db.$executeRaw`
      INSERT INTO job_run (run_id, org_id, job_index, name, needs, pool, status, tier, ready_at, dispatched_at, dispatch_generation)
      VALUES (${run[0]?.id}::uuid, ${org.id}::uuid, 0, 'build', '{}', ${pool}, 'ready', 'interactive', now(), now(), 1)`;

    const session = await registerSession(db, cfg, {
      agentTokenId: agent.id,
      pool,
      body: {
        hostname: "h",
        capacity: 1,
        labels: { os: "linux", arch: "x64", resource_class: "small", isolation: "process" },
      },
    });
    const claim = await claimJob(db, cfg, { sessionId: session.sessionId, claimRequestId: randomUUID() });
    if (claim.kind !== "claimed") throw new Error(`expected a claim, got ${claim.kind}`);
    const t = claim.ticket;

    const before = Date.now();
    const r = await completeAttempt(db, cfg, {
      attemptId: t.attemptId,
      jobId: t.jobId,
      epoch: t.epoch,
      outcome: "platform_failure",
      cause: "sandbox.lost",
      sandboxDestroyed: true,
    });
    expect(r).toEqual({ accepted: true, jobOutcome: "retry_scheduled" });

    const job = await db.$queryRaw<{ status: string; next_attempt_at: Date | null }[]>`
      SELECT status, next_attempt_at FROM job_run WHERE id = ${t.jobId}::uuid`;
    expect(job[0]?.status).toBe("ready");
    const delay = (job[0]?.next_attempt_at?.getTime() ?? 0) - before;
    // First retry: min(cap 300 s, base 400 s) = 300 s, half fixed and half jittered -> [150 s, 300 s].
    // The defaults (1 s base) would give under a second.
    expect(delay).toBeGreaterThanOrEqual(150_000 - 2_000);
    expect(delay).toBeLessThanOrEqual(300_000 + 2_000);
  });
});
