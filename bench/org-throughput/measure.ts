// One org's claims + completions per second with 8 concurrent in-process claimers (8 agent
// sessions), on a durable embedded PostgreSQL: each claimer loops claim -> complete until the
// org's READY jobs are gone. Two variants: the org with a hard cap (above the claimers' concurrency,
// so it never refuses, but the cap's bookkeeping runs) and without one. Jobs are spread over many
// runs of 4 jobs so that the run row (locked by each completion) is not what is measured.
// Prints one JSON line. Usage: tsx bench/org-throughput/measure.ts [--jobs 1024] [--rounds 2]
// It uses only the engine's public API that predates ADR 0042, so run.ts can also run this file
// against an export of an older commit (the hot-row design) for a side-by-side figure.
import { randomBytes, randomUUID } from "node:crypto";
import { chmod, mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { createDb, ensureDatabase, migrateDatabase, withTx, type Db } from "@kiln/db";
import { parseWorkflow } from "@kiln/domain";
import {
  addRepo,
  bindJobTokenKek,
  claimJob,
  completeAttempt,
  createAgentToken,
  createJobs,
  createOrg,
  DEFAULT_ENGINE_CONFIG,
  kekFromBytes,
  registerSession,
  setEntitlement,
  setPoolPolicy,
} from "@kiln/engine";
import { startPostgres } from "@kiln/testkit";
import { median, percentile } from "../lib/stats.ts";

const arg = (name: string, dflt: number) => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? Number(process.argv[i + 1]) || dflt : dflt;
};
const JOBS = arg("--jobs", 1024);
const ROUNDS = arg("--rounds", 2);
const CLAIMERS = 8;
const JOBS_PER_RUN = 4;

async function seed(db: Db, orgId: string, repoId: string, pool: string): Promise<void> {
  const yaml = `version: 1\njobs:\n${Array.from({ length: JOBS_PER_RUN }, (_, i) => `  - {name: j${i}, needs: [], steps: ["true"]}\n`).join("")}`;
  const parsed = parseWorkflow(yaml);
  if (!parsed.ok) throw new Error(parsed.error.message);
  for (let i = 0; i < JOBS / JOBS_PER_RUN; i++) {
    await withTx(db, "bench-seed", async (tx) => {
      const rows = await tx.$queryRaw<{ id: string }[]>`
        INSERT INTO workflow_run (org_id, repo_id, status, trust_class, trigger, commit_sha, workflow_path, workflow_hash, definition, inputs)
        VALUES (${orgId}::uuid, ${repoId}::uuid, 'running', 'trusted', 'manual', ${"a".repeat(40)}, '.kiln/w.yaml', 'h',
                ${JSON.stringify(parsed.definition)}::jsonb, '{}'::jsonb) RETURNING id`;
      await createJobs(tx, { id: rows[0]?.id ?? "", orgId }, parsed.definition, pool);
    });
  }
}

interface Round {
  variant: string;
  perSec: number;
  claimP50: number;
  completeP50: number;
  done: number;
  peakRunning: number;
  cap: number | null;
}

async function round(db: Db, variant: "capped" | "uncapped", n: number): Promise<Round> {
  const cfg = { ...DEFAULT_ENGINE_CONFIG, leaseTtlMs: 600_000 };
  const slug = `org-${variant}-${n}`;
  const pool = `p-${variant}-${n}`;
  const org = await createOrg(db, slug);
  const repo = await addRepo(
    db,
    {
      orgSlug: slug,
      name: `${slug}/app`,
      cloneUrl: "file:///nonexistent",
      webhookSecret: "bench-secret",
      workflowPath: ".kiln/w.yaml",
    },
    { localReposRoot: "/" },
  );
  await setPoolPolicy(db, { name: pool, minIsolation: "process", development: true, actor: "bench" });
  // Capped: a cap the 8 claimers can reach (8 running at most), so the guard is exercised, never refused.
  const cap = variant === "capped" ? 16 : null;
  await setEntitlement(db, { orgSlug: slug, pool, slots: 8, weight: 1, hardCap: cap, actor: "bench" });
  const tok = await createAgentToken(db, { pool });
  await seed(db, org.id, repo.id, pool);
  const sessions = await Promise.all(
    Array.from({ length: CLAIMERS }, (_, i) =>
      registerSession(db, cfg, {
        agentTokenId: tok.id,
        pool,
        body: {
          hostname: `h${i}`,
          capacity: 4,
          labels: { os: "linux", arch: "x64", resource_class: "small", isolation: "process" },
        },
      }),
    ),
  );
  const claimLat: number[] = [];
  const completeLat: number[] = [];
  let done = 0;
  let inFlight = 0;
  let peak = 0;
  const t0 = performance.now();
  await Promise.all(
    sessions.map(async (s) => {
      for (let empty = 0; empty < 3; ) {
        const c0 = performance.now();
        const r = await claimJob(db, cfg, { sessionId: s.sessionId, claimRequestId: randomUUID() });
        if (r.kind !== "claimed") {
          empty++;
          continue;
        }
        empty = 0;
        inFlight++;
        peak = Math.max(peak, inFlight);
        const c1 = performance.now();
        claimLat.push(c1 - c0);
        const tk = r.ticket;
        await completeAttempt(db, cfg, {
          attemptId: tk.attemptId,
          jobId: tk.jobId,
          epoch: tk.epoch,
          outcome: "success",
          sandboxDestroyed: true,
        });
        inFlight--;
        completeLat.push(performance.now() - c1);
        done++;
      }
    }),
  );
  const wall = performance.now() - t0;
  return {
    variant,
    perSec: (done / wall) * 1000,
    claimP50: percentile(claimLat, 50),
    completeP50: percentile(completeLat, 50),
    done,
    peakRunning: peak,
    cap,
  };
}

async function main(): Promise<void> {
  const tmp = await mkdtemp(path.join(os.tmpdir(), "kiln-org-bench-"));
  await chmod(tmp, 0o755);
  const pg = await startPostgres({ dataDir: path.join(tmp, "pg") });
  const url = pg.url.replace(/\/postgres$/, "/kiln");
  await ensureDatabase(url);
  await migrateDatabase(url);
  const db = createDb({ url, max: CLAIMERS + 4 });
  bindJobTokenKek(db, kekFromBytes(randomBytes(32)));
  const rounds: Round[] = [];
  try {
    for (let n = 0; n < ROUNDS; n++)
      for (const v of ["capped", "uncapped"] as const) {
        rounds.push(await round(db, v, n));
        process.stderr.write(`${JSON.stringify(rounds.at(-1))}\n`);
      }
  } finally {
    await db.$disconnect();
    await pg.stop();
    await rm(tmp, { recursive: true, force: true });
  }
  const summary = (v: string) => {
    const rs = rounds.filter((r) => r.variant === v);
    return {
      perSec: median(rs.map((r) => r.perSec)),
      claimP50: median(rs.map((r) => r.claimP50)),
      completeP50: median(rs.map((r) => r.completeP50)),
      jobs: rs.reduce((s, r) => s + r.done, 0),
    };
  };
  process.stdout.write(`${JSON.stringify({ capped: summary("capped"), uncapped: summary("uncapped") })}\n`);
}

await main();
process.stdout.write("", () => process.exit(0));
