// The attestor's figures (issue 17, docs/benchmarks.md "Attestation"), one machine, one run:
//   throughput: attestations signed (ECDSA P-256) and appended to the transparency log per second,
//     through the real use case (load records, compose, sign, one transaction: row + leaf + outbox),
//     beside its baseline, signing alone (the CPU floor no attestor can beat on this machine);
//   latency: completion commit -> attestation committed in the log, through the real path (the
//     completion transaction's outbox row, the relay, pg-boss, the attest-job handler), p50/p95.
// Real PostgreSQL (embedded) and the real engine; no web server (the attestor never calls it).
// Usage: npm run bench -- attestation [--jobs 2000] [--completions 400] [--rate 100] [--concurrency 4]
import { generateKeyPairSync, randomUUID } from "node:crypto";
import { chmod, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { createDb, ensureDatabase, migrateDatabase, withTx, type Db } from "@kiln/db";
import { composeProvenance, parseWorkflow, type ProvenanceInput } from "@kiln/domain";
import {
  addRepo,
  attestJob,
  claimJob,
  completeAttempt,
  createAgentToken,
  createJobs,
  createObjectStore,
  createOrg,
  DEFAULT_ENGINE_CONFIG,
  engineTlog,
  LogArchiveReader,
  loadFileSigner,
  registerSession,
  s3LogStore,
  setPoolPolicy,
  signStatement,
  type AttestorDeps,
  type JobTicket,
} from "@kiln/engine";
import { createLogger } from "@kiln/logger";
import { startPostgres } from "@kiln/testkit";
import pg from "pg";
import { PgBoss } from "pg-boss";
import { runAttestJob } from "@kiln/workers/attest-job";
import { OutboxRelay } from "@kiln/workers/relay";
import { median, percentile } from "../lib/stats.ts";

const arg = (name: string, fallback: string) =>
  process.argv.includes(`--${name}`) ? (process.argv[process.argv.indexOf(`--${name}`) + 1] ?? fallback) : fallback;
const JOBS = Number(arg("jobs", "2000"));
const COMPLETIONS = Number(arg("completions", "400"));
const RATE = Number(arg("rate", "100"));
const CONCURRENCY = Number(arg("concurrency", "4"));
const CFG = { ...DEFAULT_ENGINE_CONFIG, leaseTtlMs: 3_600_000 };
const WORKFLOW = `version: 1
jobs:
  - name: compile
    steps: ["true"]
    artifacts: {publish: [{name: app, path: app.bin}, {name: sbom, path: sbom.json}]}
`;
const progress = (m: string) => process.stderr.write(`${m}\n`);

async function seedJobs(
  db: Db,
  n: number,
  ctx: { orgId: string; repoId: string; sessionId: string },
): Promise<JobTicket[]> {
  const parsed = parseWorkflow(WORKFLOW);
  if (!parsed.ok) throw new Error(parsed.error.message);
  const def = parsed.definition;
  const out: JobTicket[] = [];
  for (let i = 0; i < n; i++) {
    await withTx(db, "bench-run", async (tx) => {
      const r = await tx.$queryRaw<{ id: string }[]>`
        INSERT INTO workflow_run (org_id, repo_id, status, trust_class, trigger, ref, commit_sha, workflow_path, workflow_hash, definition, inputs)
        VALUES (${ctx.orgId}::uuid, ${ctx.repoId}::uuid, 'running', 'trusted', 'manual', 'refs/heads/main', ${"b".repeat(40)},
                '.kiln/workflow.yaml', ${"c".repeat(64)}, ${JSON.stringify(def)}::jsonb, '{}'::jsonb) RETURNING id`;
      await createJobs(tx, { id: r[0]!.id, orgId: ctx.orgId }, def, "bench");
    });
    const c = await claimJob(db, CFG, { sessionId: ctx.sessionId, claimRequestId: randomUUID() });
    if (c.kind !== "claimed") throw new Error(`claim: ${c.kind}`);
    // Sealed generations as the finaliser leaves them (the bytes' path is benchmarked elsewhere).
    for (const name of ["app", "sbom"])
      await db.$executeRaw`
        INSERT INTO artifact_generation (attempt_id, job_id, run_id, org_id, epoch, name, object_key, size_bytes, sha256, state, sealed_at)
        VALUES (${c.ticket.attemptId}::uuid, ${c.ticket.jobId}::uuid, ${c.ticket.runId}::uuid, ${ctx.orgId}::uuid, ${c.ticket.epoch}, ${name},
                ${`bench/${randomUUID()}`}, 1024, encode(sha256(${randomUUID()}::bytea), 'hex'), 'sealed', now())`;
    out.push(c.ticket);
  }
  return out;
}

const complete = (db: Db, t: JobTicket) =>
  completeAttempt(db, CFG, {
    attemptId: t.attemptId,
    jobId: t.jobId,
    epoch: t.epoch,
    outcome: "success",
    sandboxDestroyed: true,
  });

async function pool<T>(items: T[], n: number, fn: (x: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: n }, async () => {
      while (next < items.length) await fn(items[next++] as T);
    }),
  );
}

async function main(): Promise<void> {
  const root = await mkdtemp(path.join(os.tmpdir(), "kiln-bench-attest-"));
  const pgh = await startPostgres({ dataDir: path.join(root, "pg") });
  const url = pgh.url.replace(/\/postgres$/, "/kiln");
  await ensureDatabase(url);
  await migrateDatabase(url);
  const db = createDb({ url, max: 10 });
  const sqlPool = new pg.Pool({ connectionString: url, max: 4 });
  const keyFile = path.join(root, "attestation-key.pem");
  await writeFile(
    keyFile,
    generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey.export({ type: "pkcs8", format: "pem" }),
    { mode: 0o600 },
  );
  await chmod(keyFile, 0o600);
  const signer = await loadFileSigner(keyFile);
  // Logs are never read here (the jobs wrote none); the reader needs a store object all the same.
  const s3 = createObjectStore({
    endpoint: "http://127.0.0.1:9",
    region: "us-east-1",
    accessKeyId: "x",
    secretAccessKey: "x",
  });
  const deps: AttestorDeps = {
    db,
    logs: { pool: sqlPool, archive: new LogArchiveReader(s3LogStore(s3, "kiln")) },
    signer,
    tlog: engineTlog,
    instanceUri: "https://kiln.bench",
  };
  const boss = new PgBoss({ connectionString: url, max: 4 });
  let relay: OutboxRelay | null = null;
  try {
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
        capacity: 100_000,
        labels: { os: "linux", arch: "x64", resource_class: "small", isolation: "process" },
      },
    });
    const ctx = { orgId: org.id, repoId: repo.id, sessionId: session.sessionId };

    // Baseline: signing alone, the same statement shape, same concurrency.
    progress(`seeding ${JOBS} completed jobs with 2 artifacts each`);
    const tickets = await seedJobs(db, JOBS, ctx);
    for (const t of tickets) await complete(db, t);
    const sample: ProvenanceInput = {
      instanceUri: "https://kiln.bench",
      org: { id: org.id, slug: "bench" },
      repo: { fullName: "bench/app", cloneUrl: "file:///none" },
      run: {
        id: randomUUID(),
        ref: "refs/heads/main",
        commitSha: "b".repeat(40),
        workflowPath: ".kiln/workflow.yaml",
        workflowSha256: "c".repeat(64),
        inputs: {},
        trustClass: "trusted",
      },
      job: { id: randomUUID(), name: "compile", pool: "bench", epoch: 1, isolation: "process", image: null },
      startedOn: new Date(),
      finishedOn: new Date(),
      subjects: [
        { name: "app", sha256: "d".repeat(64) },
        { name: "sbom", sha256: "e".repeat(64) },
      ],
      restored: [],
      caches: [],
      logs: null,
    };
    let t0 = performance.now();
    await pool(tickets, CONCURRENCY, () => signStatement(signer, composeProvenance(sample)));
    const signRate = JOBS / ((performance.now() - t0) / 1000);

    progress(`attesting ${JOBS} jobs (concurrency ${CONCURRENCY})`);
    t0 = performance.now();
    await pool(tickets, CONCURRENCY, (t) => attestJob(deps, { jobId: t.jobId, epoch: t.epoch }));
    const attestRate = JOBS / ((performance.now() - t0) / 1000);
    const leaves = await db.$queryRaw<{ n: bigint }[]>`SELECT count(*) AS n FROM tlog_entry`;

    // Latency through the real path: outbox -> relay -> pg-boss -> handler, completions paced at RATE/s.
    progress(`latency: ${COMPLETIONS} completions at ${RATE}/s through outbox, relay and pg-boss`);
    const late = await seedJobs(db, COMPLETIONS, ctx);
    await boss.start();
    await boss.createQueue("attest-job", { retryLimit: 10, retryDelay: 1, retryBackoff: true, expireInSeconds: 120 });
    const log = createLogger({ service: "bench" }, () => undefined);
    // Commit to commit, on this process's clock: completeAttempt returned / the handler returned.
    const completedAt = new Map<string, number>();
    const attestedAt = new Map<string, number>();
    const workerId = await boss.work(
      "attest-job",
      { batchSize: 2, pollingIntervalSeconds: 0.5, localConcurrency: CONCURRENCY },
      async (jobs) => {
        for (const j of jobs) {
          const data = j.data as { jobId: string; runId: string; orgId: string; epoch: number };
          await runAttestJob(deps, data, log);
          if (!attestedAt.has(data.jobId)) attestedAt.set(data.jobId, performance.now());
        }
      },
    );
    relay = new OutboxRelay(db, boss, url, 1_000, false, log, () => boss.notifyWorker(workerId));
    await relay.start();
    const startedAt = Date.now();
    for (const [i, t] of late.entries()) {
      const due = startedAt + (i * 1000) / RATE;
      if (due > Date.now()) await new Promise((r) => setTimeout(r, due - Date.now()));
      await complete(db, t);
      completedAt.set(t.jobId, performance.now());
    }
    const ids = late.map((t) => t.jobId);
    for (let waited = 0; waited < 120_000; waited += 100) {
      const n = await db.$queryRaw<
        { n: bigint }[]
      >`SELECT count(*) AS n FROM attestation WHERE job_id = ANY(${ids}::uuid[])`;
      if (Number(n[0]?.n) === ids.length) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const ms = ids.flatMap((id) => {
      const a = attestedAt.get(id);
      const c = completedAt.get(id);
      return a !== undefined && c !== undefined ? [a - c] : [];
    });
    const report = {
      machine: `${os.cpus().length} cores`,
      jobs: JOBS,
      concurrency: CONCURRENCY,
      sign_only_per_s: Math.round(signRate),
      attest_and_append_per_s: Math.round(attestRate),
      ratio_attest_to_sign: Number((attestRate / signRate).toFixed(2)),
      leaves: Number(leaves[0]?.n),
      latency: {
        completions: COMPLETIONS,
        rate_per_s: RATE,
        attested: ms.length,
        p50_ms: Math.round(median(ms)),
        p95_ms: Math.round(percentile(ms, 95)),
        max_ms: Math.round(Math.max(...ms)),
      },
    };
    console.log(JSON.stringify(report, null, 2));
  } finally {
    relay?.stop();
    await boss.stop({ graceful: false }).catch(() => undefined);
    await sqlPool.end();
    s3.destroy();
    await db.$disconnect();
    await pgh.stop();
    await rm(root, { recursive: true, force: true });
  }
}

await main();
