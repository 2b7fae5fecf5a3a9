// The claim transaction without HTTP: 8 concurrent in-process claimers against 2,048 parallel
// READY jobs on a durable embedded PostgreSQL, beside a floor of the same claimers each doing the
// smallest durable transaction (BEGIN; touch its session row; COMMIT) on the same pool. Isolates the database path of a
// claim from Next.js, to see what the claim itself costs.
// Usage: tsx bench/control-plane/claim-inprocess.ts [--rounds 3] [--labelled]
// --labelled (runner selection, issue 20): every other job asks `runs_on: {labels: [gpu]}` and half
// the claimers advertise gpu, so each claim filters candidates by the host's labels.
import { randomBytes, randomUUID } from "node:crypto";
import { chmod, mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { createDb, ensureDatabase, migrateDatabase, sqlPool, withTx, type Db } from "@kiln/db";
import { parseWorkflow } from "@kiln/domain";
import {
  bindJobTokenKek,
  kekFromBytes,
  addRepo,
  claimJob,
  createAgentToken,
  createOrg,
  DEFAULT_ENGINE_CONFIG,
  registerSession,
  setPoolPolicy,
  createJobs,
} from "@kiln/engine";
import { startPostgres } from "@kiln/testkit";
import { median, percentile } from "../lib/stats.ts";

const rounds = Number(process.argv[process.argv.indexOf("--rounds") + 1] || 3) || 3;
const CLAIMERS = 8;
const LABELLED = process.argv.includes("--labelled");
const RUNS = 8;

async function seedRound(db: Db, orgId: string, repoId: string, pool: string): Promise<void> {
  const runsOn = (i: number) => (LABELLED && i % 2 === 0 ? ", runs_on: {labels: [gpu]}" : "");
  const yaml = `version: 1\njobs:\n${Array.from({ length: 256 }, (_, i) => `  - {name: j${i}, needs: []${runsOn(i)}, steps: ["true"]}\n`).join("")}`;
  const parsed = parseWorkflow(yaml);
  if (!parsed.ok) throw new Error(parsed.error.message);
  for (let i = 0; i < RUNS; i++) {
    await withTx(db, "bench-seed", async (tx) => {
      const rows = await tx.$queryRaw<{ id: string }[]>`
        INSERT INTO workflow_run (org_id, repo_id, status, trust_class, trigger, commit_sha, workflow_path, workflow_hash, definition, inputs)
        VALUES (${orgId}::uuid, ${repoId}::uuid, 'running', 'trusted', 'manual', ${"a".repeat(40)}, '.kiln/w.yaml', 'h',
                ${JSON.stringify(parsed.definition)}::jsonb, '{}'::jsonb) RETURNING id`;
      await createJobs(tx, { id: rows[0]?.id ?? "", orgId }, parsed.definition, pool);
    });
  }
}

async function main(): Promise<void> {
  const tmp = await mkdtemp(path.join(os.tmpdir(), "kiln-claim-bench-"));
  await chmod(tmp, 0o755);
  const pg = await startPostgres({ dataDir: path.join(tmp, "pg") });
  const url = pg.url.replace(/\/postgres$/, "/kiln");
  await ensureDatabase(url);
  await migrateDatabase(url);
  const db = createDb({ url, max: 10 });
  // No web server reads these keys: a throwaway identity KEK seals them (issue 28).
  bindJobTokenKek(db, kekFromBytes(randomBytes(32)));
  const cfg = { ...DEFAULT_ENGINE_CONFIG, leaseTtlMs: 600_000 };
  const out: { claimsPerSec: number; floorTxPerSec: number; p50: number; p95: number; doubles: number }[] = [];
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
    for (let round = 0; round < rounds; round++) {
      const pool = `claim${round}`;
      await setPoolPolicy(db, { name: pool, minIsolation: "process", development: true, actor: "bench" });
      const tok = await createAgentToken(db, { pool });
      await seedRound(db, org.id, repo.id, pool);
      const sessions = await Promise.all(
        Array.from({ length: CLAIMERS }, (_, i) =>
          registerSession(db, cfg, {
            agentTokenId: tok.id,
            pool,
            body: {
              hostname: `h${i}`,
              capacity: 4096,
              labels: { os: "linux", arch: "x64", resource_class: "small", isolation: "process" },
              ...(LABELLED && i % 2 === 0 ? { runner_labels: ["gpu"] } : {}),
            },
          }),
        ),
      );
      const lat: number[] = [];
      let claimed = 0;
      const t0 = performance.now();
      await Promise.all(
        sessions.map(async (s) => {
          for (;;) {
            const c0 = performance.now();
            const r = await claimJob(db, cfg, { sessionId: s.sessionId, claimRequestId: randomUUID() });
            if (r.kind !== "claimed") return;
            lat.push(performance.now() - c0);
            claimed++;
          }
        }),
      );
      const wall = performance.now() - t0;
      const sql = sqlPool(db);
      const f0 = performance.now();
      await Promise.all(
        sessions.map(async (s) => {
          for (let i = 0; i < 200; i++) {
            const c = await sql.connect();
            try {
              await c.query("BEGIN");
              await c.query("UPDATE agent_session SET last_seen_at = now() WHERE id = $1::uuid", [s.sessionId]);
              await c.query("COMMIT");
            } finally {
              c.release();
            }
          }
        }),
      );
      const floorWall = performance.now() - f0;
      const dup = await db.$queryRaw<
        { n: bigint }[]
      >`SELECT count(*) AS n FROM (SELECT job_id FROM attempt GROUP BY job_id HAVING count(*) > 1) d`;
      out.push({
        claimsPerSec: (claimed / wall) * 1000,
        floorTxPerSec: ((CLAIMERS * 200) / floorWall) * 1000,
        p50: percentile(lat, 50),
        p95: percentile(lat, 95),
        doubles: Number(dup[0]?.n ?? 0n),
      });
      process.stderr.write(`round ${round}: ${JSON.stringify(out.at(-1))} (${claimed} claims)\n`);
    }
  } finally {
    await db.$disconnect();
    await pg.stop();
    await rm(tmp, { recursive: true, force: true });
  }
  const f = (x: number) => x.toFixed(1);
  console.log(`| in-process claim, ${CLAIMERS} claimers${LABELLED ? ", half the jobs and claimers labelled" : ""} (median of ${rounds}) | value |
|---|---|
| claims/s | ${f(median(out.map((o) => o.claimsPerSec)))} |
| floor: one-row durable transactions/s, same pool and claimers | ${f(median(out.map((o) => o.floorTxPerSec)))} |
| ratio | ${median(out.map((o) => o.claimsPerSec / o.floorTxPerSec)).toFixed(2)} |
| claim latency p50 / p95 | ${f(median(out.map((o) => o.p50)))} / ${f(median(out.map((o) => o.p95)))} ms |
| double claims | ${out.reduce((s, o) => s + o.doubles, 0)} |`);
}

await main();
process.stdout.write("", () => process.exit(0));
