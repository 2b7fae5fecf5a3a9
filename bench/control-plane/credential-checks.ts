// What issue 15's credential checks cost on the hot paths, statement by statement: the claim's
// first statement (session lock + credential), the heartbeat's guarded UPDATE and the API-token
// lookup, each in its form before (no revocation join, no expiry, no last-used) and after, run
// alternately on one embedded PostgreSQL with realistic table sizes (2,000 API tokens, 500 host
// credentials with a session each). Prepared statements, one connection, sequential: this isolates
// the statements' own cost from contention.
// Usage: tsx bench/control-plane/credential-checks.ts [--iterations 4000]
import { randomBytes, randomUUID } from "node:crypto";
import { chmod, mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { createDb, ensureDatabase, migrateDatabase, sqlPool, withTx } from "@kiln/db";
import { parseWorkflow } from "@kiln/domain";
import {
  bindJobTokenKek,
  kekFromBytes,
  addRepo,
  claimJob,
  createAgentToken,
  createApiToken,
  createOrg,
  DEFAULT_ENGINE_CONFIG,
  hashSecret,
  registerSession,
  setPoolPolicy,
  createJobs,
} from "@kiln/engine";
import { startPostgres } from "@kiln/testkit";
import { percentile } from "../lib/stats.ts";

const iterations = Number(process.argv[process.argv.indexOf("--iterations") + 1] || 4000) || 4000;

const CLAIM_BEFORE = `WITH s AS (
    UPDATE agent_session SET last_seen_at = now()
    WHERE id = $1::uuid
      AND ($3::text IS NULL OR agent_token_id = (SELECT id FROM agent_token WHERE token_hash = $3 AND revoked_at IS NULL))
    RETURNING id, pool, capacity, hostname)
  SELECT s.id, s.pool, s.capacity, s.hostname,
         ($3::text IS NULL OR EXISTS (SELECT 1 FROM agent_token WHERE token_hash = $3 AND revoked_at IS NULL)) AS token_ok,
         (SELECT count(*)::int FROM attempt WHERE session_id = s.id AND status = 'running') AS running,
         r.id AS replay_id, r.session_id AS replay_session
  FROM (SELECT 1) AS one LEFT JOIN s ON true LEFT JOIN attempt r ON r.claim_request_id = $2`;
const CLAIM_AFTER = `WITH s AS (
    UPDATE agent_session SET last_seen_at = now()
    WHERE id = $1::uuid
      AND ($3::text IS NULL OR agent_token_id = (SELECT id FROM agent_token WHERE token_hash = $3))
    RETURNING id, pool, capacity, hostname, agent_token_id)
  SELECT s.id, s.pool, s.capacity, s.hostname, t.org_id AS token_org,
         ($3::text IS NULL OR EXISTS (SELECT 1 FROM agent_token WHERE token_hash = $3)) AS token_ok,
         (t.revoked_at IS NOT NULL
          OR ($3::text IS NOT NULL AND EXISTS (SELECT 1 FROM agent_token WHERE token_hash = $3 AND revoked_at IS NOT NULL))) AS revoked,
         (SELECT count(*)::int FROM attempt WHERE session_id = s.id AND status = 'running') AS running,
         r.id AS replay_id, r.session_id AS replay_session
  FROM (SELECT 1) AS one LEFT JOIN s ON true LEFT JOIN agent_token t ON t.id = s.agent_token_id
    LEFT JOIN attempt r ON r.claim_request_id = $2`;
const HEARTBEAT = (revocation: boolean) => `
  UPDATE attempt a SET lease_expires_at = now() + make_interval(secs => 600)
  FROM job_run j, workflow_run r
  WHERE a.id = $1::uuid AND a.job_id = $2::uuid AND j.id = a.job_id AND r.id = a.run_id
    AND a.status = 'running' AND a.epoch = $3 AND j.current_epoch = a.epoch AND a.lease_expires_at > now()
    ${revocation ? "AND NOT EXISTS (SELECT 1 FROM agent_session s JOIN agent_token t ON t.id = s.agent_token_id WHERE s.id = a.session_id AND t.revoked_at IS NOT NULL)" : ""}
  RETURNING a.lease_expires_at`;
const API_BEFORE = `SELECT id, org_id, role, name FROM api_token WHERE token_hash = $1 AND revoked_at IS NULL`;
const API_AFTER = `WITH t AS (
    SELECT id, org_id, role, name, revoked_at IS NOT NULL AS revoked, expires_at <= now() AS expired, last_used_at
    FROM api_token WHERE token_hash = $1),
  touched AS (
    UPDATE api_token a SET last_used_at = now() FROM t
    WHERE a.id = t.id AND NOT t.revoked AND NOT t.expired
      AND (t.last_used_at IS NULL OR t.last_used_at < now() - interval '1 minute')
    RETURNING a.id)
  SELECT id, org_id, role, name, revoked, expired FROM t`;

async function main(): Promise<void> {
  const tmp = await mkdtemp(path.join(os.tmpdir(), "kiln-cred-bench-"));
  await chmod(tmp, 0o755);
  const pg = await startPostgres({ dataDir: path.join(tmp, "pg") });
  const url = pg.url.replace(/\/postgres$/, "/kiln");
  await ensureDatabase(url);
  await migrateDatabase(url);
  const db = createDb({ url, max: 4 });
  // No web server reads these keys: a throwaway identity KEK seals them (issue 28).
  bindJobTokenKek(db, kekFromBytes(randomBytes(32)));
  try {
    const org = await createOrg(db, "bench");
    const repo = await addRepo(
      db,
      {
        orgSlug: "bench",
        name: "bench/app",
        cloneUrl: "file:///nonexistent",
        webhookSecret: "bench-secret",
        workflowPath: ".kiln/w.yaml",
      },
      { localReposRoot: "/" },
    );
    await setPoolPolicy(db, { name: "cred", minIsolation: "process", development: true, actor: "bench" });
    const labels = { os: "linux", arch: "x64", resource_class: "small", isolation: "process" as const };
    for (let i = 0; i < 500; i++) {
      const t = await createAgentToken(db, { pool: "cred" });
      await registerSession(db, DEFAULT_ENGINE_CONFIG, {
        agentTokenId: t.id,
        pool: t.pool,
        body: { hostname: `h${i}`, capacity: 4, labels },
      });
    }
    for (let i = 0; i < 2000; i++) await createApiToken(db, { orgSlug: "bench", role: "member", name: `t${i}` });
    const api = await createApiToken(db, { orgSlug: "bench", role: "member", name: "probe" });
    const cred = await createAgentToken(db, { pool: "cred" });
    const session = await registerSession(db, DEFAULT_ENGINE_CONFIG, {
      agentTokenId: cred.id,
      pool: "cred",
      body: { hostname: "probe", capacity: 1000, labels },
    });
    const parsed = parseWorkflow('version: 1\njobs:\n  - {name: j, needs: [], steps: ["true"]}\n');
    if (!parsed.ok) throw new Error(parsed.error.message);
    await withTx(db, "bench-seed", async (tx) => {
      const rows = await tx.$queryRaw<{ id: string }[]>`
        INSERT INTO workflow_run (org_id, repo_id, status, trust_class, trigger, commit_sha, workflow_path, workflow_hash, definition, inputs)
        VALUES (${org.id}::uuid, ${repo.id}::uuid, 'running', 'trusted', 'manual', ${"a".repeat(40)}, '.kiln/w.yaml', 'h',
                ${JSON.stringify(parsed.definition)}::jsonb, '{}'::jsonb) RETURNING id`;
      await createJobs(tx, { id: rows[0]?.id ?? "", orgId: org.id }, parsed.definition, "cred");
    });
    const claimed = await claimJob(
      db,
      { ...DEFAULT_ENGINE_CONFIG, leaseTtlMs: 3_600_000 },
      { sessionId: session.sessionId, claimRequestId: randomUUID(), credentialHash: hashSecret(cred.token) },
    );
    if (claimed.kind !== "claimed") throw new Error(`no attempt to heartbeat: ${claimed.kind}`);
    const ticket = claimed.ticket;

    const client = await sqlPool(db).connect();
    const time = async (name: string, text: string, values: unknown[], tx: boolean): Promise<number> => {
      const t0 = performance.now();
      if (tx) await client.query("BEGIN");
      const r = await client.query({ name, text, values });
      if (tx) await client.query("COMMIT");
      if (r.rows.length !== 1) throw new Error(`${name} returned ${r.rows.length} rows`);
      return performance.now() - t0;
    };
    const cases: { label: string; run: (after: boolean) => Promise<number> }[] = [
      {
        label: "claim: first statement (BEGIN; stmt; COMMIT)",
        run: (after) =>
          time(
            after ? "b-claim-after" : "b-claim-before",
            after ? CLAIM_AFTER : CLAIM_BEFORE,
            [session.sessionId, randomUUID(), hashSecret(cred.token)],
            true,
          ),
      },
      {
        label: "heartbeat: guarded lease UPDATE",
        run: (after) =>
          time(
            after ? "b-hb-after" : "b-hb-before",
            HEARTBEAT(after),
            [ticket.attemptId, ticket.jobId, ticket.epoch],
            false,
          ),
      },
      {
        label: "API token lookup (after: + expiry, revoked, throttled last-used)",
        run: (after) =>
          time(after ? "b-api-after" : "b-api-before", after ? API_AFTER : API_BEFORE, [hashSecret(api.token)], false),
      },
    ];
    console.log(`| statement (${iterations} runs each, alternating) | before p50 / p95 µs | after p50 / p95 µs |`);
    console.log("|---|---|---|");
    try {
      for (const c of cases) {
        const before: number[] = [];
        const after: number[] = [];
        for (let i = 0; i < 200; i++) await c.run(i % 2 === 1); // warm-up, plans cached
        for (let i = 0; i < iterations; i++) (i % 2 === 0 ? before : after).push(await c.run(i % 2 === 1));
        const us = (xs: number[], p: number) => (percentile(xs, p) * 1000).toFixed(0);
        console.log(`| ${c.label} | ${us(before, 50)} / ${us(before, 95)} | ${us(after, 50)} / ${us(after, 95)} |`);
      }
    } finally {
      client.release();
    }
  } finally {
    await db.$disconnect();
    await pg.stop();
    await rm(tmp, { recursive: true, force: true });
  }
}

await main();
