// The decision service's latency (issue 18, docs/benchmarks.md "Environments: gate decisions"),
// one machine, one run, side by side and alternating so load drift falls on every series alike:
//   baseline: a bare indexed lookup of the environment row by id (one round trip through the same
//     client): the floor any decision that reads the environment pays;
//   decide (pending): a promotion request to production with the warm policy cache: the facts'
//     statement_timeout reads (run and jobs, attestation + signature verification + log leaf,
//     quarantine, the previous environment's stays), decide(), the promotion row, audit and event;
//     production waits for an approval, so nothing moves;
//   decide + move: the same to staging, where the gates allow and the pointer moves in the same
//     transaction (history row, outbox message);
//   rollback: a rollback in staging between two retained digests (gates as a rollback + the move).
// Real PostgreSQL (embedded), real attested artifacts (signed, in the transparency log).
// Usage: npm run bench -- environments [--samples 300] [--artifacts 40]
import { generateKeyPairSync, randomBytes, randomUUID } from "node:crypto";
import { chmod, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { createDb, ensureDatabase, migrateDatabase, withTx, type Db } from "@kiln/db";
import { parseWorkflow } from "@kiln/domain";
import {
  bindJobTokenKek,
  kekFromBytes,
  addMember,
  attestJob,
  builderPrefixFor,
  claimJob,
  completeAttempt,
  createEnvironment,
  createJobs,
  createObjectStore,
  DEFAULT_ENGINE_CONFIG,
  engineTlog,
  LogArchiveReader,
  loadFileSigner,
  PolicyCache,
  requestPromotion,
  requestRollback,
  s3LogStore,
  type EnvActor,
  type EnvDeps,
} from "@kiln/engine";
import { startPostgres } from "@kiln/testkit";
import pg from "pg";
import { seedTenant } from "../attestation/seed.ts";
import { median, percentile } from "../lib/stats.ts";

const arg = (name: string, fallback: string) =>
  process.argv.includes(`--${name}`) ? (process.argv[process.argv.indexOf(`--${name}`) + 1] ?? fallback) : fallback;
const SAMPLES = Number(arg("samples", "300"));
const ARTIFACTS = Number(arg("artifacts", "40"));
const CFG = { ...DEFAULT_ENGINE_CONFIG, leaseTtlMs: 3_600_000 };
const WORKFLOW = `version: 1
jobs:
  - name: build
    steps: ["true"]
    artifacts: {publish: [{name: app, path: app.bin}]}
`;
const progress = (m: string) => process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${m}\n`);

async function main(): Promise<void> {
  const root = await mkdtemp(path.join(os.tmpdir(), "kiln-bench-env-"));
  const pgh = await startPostgres({ dataDir: path.join(root, "pg") });
  const url = pgh.url.replace(/\/postgres$/, "/kiln");
  await ensureDatabase(url);
  await migrateDatabase(url);
  const db = createDb({ url, max: 10 });
  // No web server reads these keys: a throwaway identity KEK seals them (issue 28).
  bindJobTokenKek(db, kekFromBytes(randomBytes(32)));
  const sqlPool = new pg.Pool({ connectionString: url, max: 4 });
  const keyFile = path.join(root, "attestation-key.pem");
  await writeFile(
    keyFile,
    generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey.export({ type: "pkcs8", format: "pem" }),
    { mode: 0o600 },
  );
  await chmod(keyFile, 0o600);
  const signer = await loadFileSigner(keyFile);
  const s3 = createObjectStore({
    endpoint: "http://127.0.0.1:9",
    region: "us-east-1",
    accessKeyId: "x",
    secretAccessKey: "x",
  });
  try {
    // The same tenant, pool and agent session the attestation bench seeds (bench/attestation/seed.ts).
    const tenant = await seedTenant(db);
    progress(`seeding ${ARTIFACTS} attested artifacts`);
    const artifacts = await seedAttested(db, sqlPool, signer, s3, tenant);
    const dev = await addMember(db, { orgSlug: "bench", login: "dev", role: "member" });
    const admin = await addMember(db, { orgSlug: "bench", login: "ada", role: "admin" });
    const actor: EnvActor = { orgId: tenant.orgId, role: "member", userId: dev.userId, login: "dev", actor: "web:dev" };
    const adminActor: EnvActor = {
      orgId: tenant.orgId,
      role: "admin",
      userId: admin.userId,
      login: "ada",
      actor: "web:ada",
    };
    const deps: EnvDeps = {
      builderPrefix: builderPrefixFor("https://kiln.bench"),
      gateTimeoutMs: 400,
      policies: new PolicyCache(),
    };
    const staging = await createEnvironment(db, adminActor, { repoId: tenant.repoId, name: "staging" });
    const production = await createEnvironment(db, adminActor, {
      repoId: tenant.repoId,
      name: "production",
      after: "staging",
    });
    // Staging holds every artifact once (production's previous-environment gate passes) and ends on
    // [0]; rollbacks then alternate between [1] and [0].
    for (const a of [...artifacts.slice(1), artifacts[0] as string])
      await requestPromotion(db, deps, actor, {
        environmentId: staging.id,
        artifact: { artifactId: a },
        reason: "seed",
      });

    const series = {
      baseline: [] as number[],
      pending: [] as number[],
      move: [] as number[],
      rollback: [] as number[],
    };
    const time = async (into: number[], fn: () => Promise<unknown>) => {
      const t0 = performance.now();
      await fn();
      into.push(performance.now() - t0);
    };
    const lookup = () =>
      db.$queryRaw`SELECT id, policy_version, pointer_seq FROM environment WHERE id = ${staging.id}::uuid`;
    // Warm-up: connections, prepared plans, the policy cache (the subject is the warm path).
    for (let i = 0; i < 5; i++) {
      await lookup();
      await requestPromotion(db, deps, actor, {
        environmentId: production.id,
        artifact: { artifactId: artifacts[i % ARTIFACTS] as string },
        reason: "warm",
      });
    }
    progress(`measuring ${SAMPLES} samples per series, alternating`);
    for (let i = 0; i < SAMPLES; i++) {
      const a = artifacts[i % ARTIFACTS] as string;
      await time(series.baseline, lookup);
      await time(series.pending, () =>
        requestPromotion(db, deps, actor, {
          environmentId: production.id,
          artifact: { artifactId: a },
          reason: "bench",
        }),
      );
      await time(series.move, () =>
        requestPromotion(db, deps, actor, { environmentId: staging.id, artifact: { artifactId: a }, reason: "bench" }),
      );
      // Staging now runs `a`; roll back to the artifact it ran before.
      const prev = artifacts[(i + ARTIFACTS - 1) % ARTIFACTS] as string;
      await time(series.rollback, () =>
        requestRollback(db, deps, actor, {
          environmentId: staging.id,
          toArtifactId: prev,
          reason: "bench",
        }),
      );
    }
    const load = os
      .loadavg()
      .map((x) => x.toFixed(2))
      .join(" ");
    const row = (name: string, xs: number[]) =>
      `| ${name} | ${median(xs).toFixed(1)} ms | ${percentile(xs, 99).toFixed(1)} ms | ${Math.max(...xs).toFixed(1)} ms | ${(median(xs) / median(series.baseline)).toFixed(1)}x |`;
    const out = [
      `Gate decisions, ${SAMPLES} samples per series, alternating, warm policy cache (${os.cpus().length} cores, load ${load}):`,
      "",
      "| series | p50 | p99 | max | p50 / baseline |",
      "|---|---|---|---|---|",
      row("baseline: indexed environment lookup", series.baseline),
      row("decide, production (pending approval)", series.pending),
      row("decide + pointer move, staging (allow)", series.move),
      row("rollback (gates as a rollback + move)", series.rollback),
      "",
      `policy cache entries: ${deps.policies.size}`,
    ].join("\n");
    process.stdout.write(`${out}\n`);
  } finally {
    await db.$disconnect();
    await sqlPool.end();
    await pgh.stop();
    await rm(root, { recursive: true, force: true });
  }
}

/** Runs of one job that published `app` (a sealed generation as the finaliser leaves it), completed and attested. */
async function seedAttested(
  db: Db,
  sqlPool: pg.Pool,
  signer: Awaited<ReturnType<typeof loadFileSigner>>,
  s3: ReturnType<typeof createObjectStore>,
  ctx: { orgId: string; repoId: string; sessionId: string },
): Promise<string[]> {
  const parsed = parseWorkflow(WORKFLOW);
  if (!parsed.ok) throw new Error(parsed.error.message);
  const def = parsed.definition;
  const out: string[] = [];
  for (let i = 0; i < ARTIFACTS; i++) {
    await withTx(db, "bench-run", async (tx) => {
      const r = await tx.$queryRaw<{ id: string }[]>`
        INSERT INTO workflow_run (org_id, repo_id, status, trust_class, trigger, ref, commit_sha, workflow_path, workflow_hash, definition, inputs)
        VALUES (${ctx.orgId}::uuid, ${ctx.repoId}::uuid, 'running', 'trusted', 'manual', 'refs/heads/main', ${"b".repeat(40)},
                '.kiln/workflow.yaml', ${"c".repeat(64)}, ${JSON.stringify(def)}::jsonb, '{}'::jsonb) RETURNING id`;
      await createJobs(tx, { id: r[0]?.id ?? "", orgId: ctx.orgId }, def, "bench");
    });
    const c = await claimJob(db, CFG, { sessionId: ctx.sessionId, claimRequestId: randomUUID() });
    if (c.kind !== "claimed") throw new Error(`claim: ${c.kind}`);
    const g = await db.$queryRaw<{ id: string }[]>`
      INSERT INTO artifact_generation (attempt_id, job_id, run_id, org_id, epoch, name, object_key, size_bytes, sha256, state, sealed_at)
      VALUES (${c.ticket.attemptId}::uuid, ${c.ticket.jobId}::uuid, ${c.ticket.runId}::uuid, ${ctx.orgId}::uuid, ${c.ticket.epoch}, 'app',
              ${`bench/${randomUUID()}`}, 1024, encode(sha256(${randomUUID()}::bytea), 'hex'), 'sealed', now()) RETURNING id`;
    await completeAttempt(db, CFG, { ...c.ticket, outcome: "success", sandboxDestroyed: true });
    const att = await attestJob(
      {
        db,
        logs: { pool: sqlPool, archive: new LogArchiveReader(s3LogStore(s3, "kiln")) },
        signer,
        tlog: engineTlog,
        instanceUri: "https://kiln.bench",
      },
      { jobId: c.ticket.jobId, epoch: c.ticket.epoch },
    );
    if (att.kind !== "attested") throw new Error(`attest: ${att.kind}`);
    out.push(g[0]?.id ?? "");
  }
  return out;
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
