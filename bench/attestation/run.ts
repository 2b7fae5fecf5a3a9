// The attestor's figures (issue 17, docs/benchmarks.md "Attestation"), one machine, one run, each
// measurement beside its baselines, rounds interleaved, `cat /proc/loadavg` recorded with each:
//   throughput (attestations signed and appended to the transparency log per second):
//     sign only: compose + DSSE sign (ECDSA P-256) of the same statement shape, the CPU floor;
//     bare append: envelope-sized log entries, one per transaction (8 writers) and 64 per
//       transaction (2 writers), the log's own ceiling either way;
//     per job: the real use case one job per call (attestJob, 4 concurrent), as the handler ran
//       before batching;
//     batched: attestJobs over 64 jobs per call, 2 in flight (what the attest-job handler does);
//   latency: completion commit -> attestation committed in the log (the handler returned), and ->
//     first signed checkpoint covering it, through the real path (the completion transaction's
//     outbox row, the workers' OutboxRelay, pg-boss with the attest-job definition's batch size and
//     concurrency, runAttestJobs, a checkpoint signer ticking every second), commits paced at each
//     --latency rate for --seconds by a separate process (complete-paced.ts: real completions, or
//     only the completion's outbox row for rates the completion path itself cannot reach here).
// Real PostgreSQL (embedded, durable) and the real engine; no web server (the attestor never calls it).
// Usage: npm run bench -- attestation [--per-job 300] [--batched 1500] [--rounds 2] [--seconds 10]
//   [--latency complete:10,complete:40,outbox:200]
import { spawn } from "node:child_process";
import { generateKeyPairSync, randomBytes, randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { chmod, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { createDb, ensureDatabase, migrateDatabase, withTx, type Db } from "@kiln/db";
import { composeProvenance, type ProvenanceInput } from "@kiln/domain";
import {
  bindJobTokenKek,
  kekFromBytes,
  appendTlogEntries,
  appendTlogEntry,
  attestJob,
  attestJobs,
  createObjectStore,
  engineTlog,
  latestCheckpoint,
  LogArchiveReader,
  loadFileSigner,
  logSigner,
  s3LogStore,
  signCheckpoint,
  signStatement,
  type AttestorDeps,
  type JobTicket,
} from "@kiln/engine";
import { createLogger } from "@kiln/logger";
import { startPostgres } from "@kiln/testkit";
import pg from "pg";
import { PgBoss, type JobResult } from "pg-boss";
import { attestJobJob, runAttestJobs } from "@kiln/workers/attest-job";
import { OutboxRelay } from "@kiln/workers/relay";
import { median, percentile } from "../lib/stats.ts";
import { complete, pool, seedJobs, seedTenant, type BenchTenant } from "./seed.ts";

const arg = (name: string, fallback: string) =>
  process.argv.includes(`--${name}`) ? (process.argv[process.argv.indexOf(`--${name}`) + 1] ?? fallback) : fallback;
const PER_JOB = Number(arg("per-job", "300"));
const BATCHED = Number(arg("batched", "1500"));
const ROUNDS = Number(arg("rounds", "2"));
// mode:rate pairs; "complete" runs completeAttempt, "outbox" commits only the completion's outbox row.
const LATENCY = arg("latency", "complete:10,complete:40,outbox:200")
  .split(",")
  .map((x) => ({ mode: x.split(":")[0]!, rate: Number(x.split(":")[1]) }));
const SECONDS = Number(arg("seconds", "10"));
const BATCH = attestJobJob.batchSize ?? 2;
const IN_FLIGHT = attestJobJob.concurrency ?? 1;
const progress = (m: string) => process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${m}\n`);
const load = () => readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
const chunks = <T>(xs: T[], n: number) =>
  Array.from({ length: Math.ceil(xs.length / n) }, (_, i) => xs.slice(i * n, i * n + n));

async function timed(n: number, f: () => Promise<unknown>): Promise<{ perSec: number; load: string }> {
  const t0 = performance.now();
  await f();
  return { perSec: Math.round(n / ((performance.now() - t0) / 1000)), load: load() };
}

function sampleInput(orgId: string): ProvenanceInput {
  return {
    instanceUri: "https://kiln.bench",
    org: { id: orgId, slug: "bench" },
    repo: { fullName: "bench/app", cloneUrl: "file:///none" },
    run: {
      id: randomUUID(),
      ref: "refs/heads/main",
      commitSha: "b".repeat(40),
      workflowPath: ".kiln/workflow.yaml",
      workflowSha256: "c".repeat(64),
      inputsSha256: "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a",
      trustClass: "trusted",
    },
    job: {
      id: randomUUID(),
      name: "compile",
      pool: "bench",
      epoch: 1,
      isolation: "process",
      host: { kind: "platform", isolation: "process" },
      image: null,
    },
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
}

let seq = 0;
const entry = (size: number) => ({ kind: "bench", bytes: randomBytes(size), dedupeKey: `bench-${seq++}` });

/** One throughput round: every variant on fresh jobs, in the given order. */
async function throughputRound(db: Db, deps: AttestorDeps, ctx: BenchTenant, order: string[], envSize: number) {
  progress(`seeding ${PER_JOB + BATCHED} completed jobs`);
  const tickets = await seedJobs(db, ctx, PER_JOB + BATCHED);
  for (const t of tickets) await complete(db, t);
  const perJob = tickets.slice(0, PER_JOB);
  const batched = tickets.slice(PER_JOB);
  const ref = (t: JobTicket) => ({ jobId: t.jobId, epoch: t.epoch });
  const out: Record<string, { perSec: number; load: string }> = {};
  for (const v of order) {
    progress(`round: ${v}`);
    if (v === "sign_only")
      out[v] = await timed(BATCHED, () =>
        pool(batched, 4, () => signStatement(deps.signer, composeProvenance(sampleInput(ctx.orgId)))),
      );
    if (v === "append_one_per_tx")
      out[v] = await timed(PER_JOB, () =>
        pool(perJob, 8, () => withTx(db, "bench-append", (tx) => appendTlogEntry(tx, entry(envSize)))),
      );
    if (v === "append_batched")
      out[v] = await timed(BATCHED, () =>
        pool(chunks(batched, BATCH), IN_FLIGHT, (c) =>
          withTx(db, "bench-append", (tx) =>
            appendTlogEntries(
              tx,
              c.map(() => entry(envSize)),
            ),
          ),
        ),
      );
    if (v === "attest_per_job") out[v] = await timed(PER_JOB, () => pool(perJob, 4, (t) => attestJob(deps, ref(t))));
    if (v === "attest_batched")
      out[v] = await timed(BATCHED, () =>
        pool(chunks(batched, BATCH), IN_FLIGHT, async (c) => {
          const rs = await attestJobs(deps, c.map(ref));
          const bad = rs.find((r) => r.kind !== "attested");
          if (bad) throw new Error(`batched attest: ${JSON.stringify(bad)}`);
        }),
      );
  }
  return out;
}

/** Completions paced at `rate`/s (by a process of their own) through outbox, relay, pg-boss and the handler. */
async function latencyRound(
  db: Db,
  url: string,
  root: string,
  ctx: BenchTenant,
  { mode, rate }: { mode: string; rate: number },
  attestedAt: Map<string, number>,
  startRelay: () => Promise<OutboxRelay>,
) {
  const late = await seedJobs(db, ctx, rate * SECONDS);
  if (mode === "outbox") for (const t of late) await complete(db, t);
  // Earlier phases' outbox rows (and in outbox mode these completions' own) are not this
  // measurement's: the relay starts after they are set aside.
  await db.$executeRaw`UPDATE outbox SET published_at = now() WHERE published_at IS NULL`;
  const relay = await startRelay();
  const file = path.join(root, `tickets-${rate}.json`);
  await writeFile(file, JSON.stringify(late.map((t) => ({ ...t, orgId: ctx.orgId }))));
  const startLoad = load();
  const child = spawn(
    process.execPath,
    [...process.execArgv, path.join(import.meta.dirname, "complete-paced.ts"), url, file, String(rate), mode],
    {
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
  let stdout = "";
  child.stdout.on("data", (b: Buffer) => (stdout += b.toString()));
  const code = await new Promise<number | null>((r) => child.on("exit", r));
  if (code !== 0) throw new Error(`completer exited ${code}`);
  const done = JSON.parse(stdout) as { offeredPerSec: number; committedAt: Record<string, number> };
  const ids = late.map((t) => t.jobId);
  for (let waited = 0; waited < 120_000 && ids.some((id) => !attestedAt.has(id)); waited += 50)
    await new Promise((r) => setTimeout(r, 50));
  relay.stop();
  const ms = ids.flatMap((id) => {
    const a = attestedAt.get(id);
    const c = done.committedAt[id];
    return a !== undefined && c !== undefined ? [a - c] : [];
  });
  return { ids, completedAt: done.committedAt, offered: done.offeredPerSec, ms, startLoad, endLoad: load() };
}

async function main(): Promise<void> {
  const root = await mkdtemp(path.join(os.tmpdir(), "kiln-bench-attest-"));
  const pgh = await startPostgres({ dataDir: path.join(root, "pg") });
  const url = pgh.url.replace(/\/postgres$/, "/kiln");
  await ensureDatabase(url);
  await migrateDatabase(url);
  const db = createDb({ url, max: 10 });
  // No web server reads these keys: a throwaway identity KEK seals them (issue 28).
  bindJobTokenKek(db, kekFromBytes(randomBytes(32)));
  const sqlPool = new pg.Pool({ connectionString: url, max: 4 });
  const keyFile = path.join(root, "attestation-key.pem");
  const pkcs8 = generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey.export({ type: "pkcs8", format: "pem" });
  await writeFile(keyFile, pkcs8, { mode: 0o600 });
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
  let relay: OutboxRelay | null = null as OutboxRelay | null;
  let stopSigner = false;
  let signerLoop: Promise<void> = Promise.resolve();
  try {
    const ctx = await seedTenant(db);
    const envSize = (await signStatement(signer, composeProvenance(sampleInput(ctx.orgId)))).envelopeJson.length;
    const orders = [
      ["sign_only", "append_one_per_tx", "append_batched", "attest_per_job", "attest_batched"],
      ["attest_batched", "attest_per_job", "append_batched", "append_one_per_tx", "sign_only"],
    ];
    const rounds: Record<string, { perSec: number; load: string }>[] = [];
    for (let r = 0; r < ROUNDS; r++) rounds.push(await throughputRound(db, deps, ctx, orders[r % 2]!, envSize));
    const leaves = await db.$queryRaw<{ n: bigint }[]>`SELECT count(*) AS n FROM tlog_entry WHERE kind = 'dsse'`;
    const rows = await db.$queryRaw<{ n: bigint }[]>`SELECT count(*) AS n FROM attestation`;

    // The real path, with the workers' settings for the attest-job queue and a checkpoint signer.
    await boss.start();
    await boss.createQueue(attestJobJob.name, {
      retryLimit: attestJobJob.retryLimit,
      retryDelay: attestJobJob.retryDelaySeconds,
      retryBackoff: true,
      expireInSeconds: attestJobJob.expireInSeconds,
    });
    const log = createLogger({ service: "bench" }, () => undefined);
    const attestedAt = new Map<string, number>();
    let failures = 0;
    const workerId = await boss.work(
      attestJobJob.name,
      {
        batchSize: BATCH,
        burstWhenBatchFull: true,
        perJobResults: true,
        pollingIntervalSeconds: 0.5,
        localConcurrency: IN_FLIGHT,
      },
      async (jobs) => {
        const data = jobs.map((j) => attestJobJob.payload.parse(j.data));
        const outcomes = await runAttestJobs(deps, data, log);
        const now = performance.timeOrigin + performance.now();
        return jobs.map((j, i): JobResult => {
          if (outcomes[i]) {
            failures++;
            return { id: j.id, status: "failed", output: { message: outcomes[i].message } };
          }
          if (!attestedAt.has(data[i]!.jobId)) attestedAt.set(data[i]!.jobId, now);
          return { id: j.id, status: "completed" };
        });
      },
    );
    const startRelay = async () => {
      relay = new OutboxRelay(db, boss, url, 1_000, false, log, () => boss.notifyWorker(workerId));
      await relay.start();
      return relay;
    };
    const logKey = await logSigner(db, { origin: "bench.kiln.test/tlog", kek: new Uint8Array(randomBytes(32)) });
    const checkpointedAt: { size: number; at: number }[] = [];
    signerLoop = (async () => {
      while (!stopSigner) {
        await new Promise((r) => setTimeout(r, 1_000));
        await signCheckpoint(db, logKey, { headFile: path.join(root, "tlog-signed-head.json") });
        const cp = await latestCheckpoint(db);
        if (cp) checkpointedAt.push({ size: cp.size, at: performance.timeOrigin + performance.now() });
      }
    })();

    const latency = [];
    for (const l of LATENCY) {
      progress(`latency: ${l.rate * SECONDS} ${l.mode} commits at ${l.rate}/s`);
      const r = await latencyRound(db, url, root, ctx, l, attestedAt, startRelay);
      await new Promise((res) => setTimeout(res, 2_500)); // the next checkpoint covers the last ones
      const idx = await db.$queryRaw<{ job_id: string; tlog_index: bigint }[]>`
        SELECT job_id, tlog_index FROM attestation WHERE job_id = ANY(${r.ids}::uuid[])`;
      const toCheckpoint = idx.flatMap((a) => {
        const cp = checkpointedAt.find((c) => c.size > Number(a.tlog_index));
        const c = r.completedAt[a.job_id];
        return cp && c !== undefined ? [cp.at - c] : [];
      });
      latency.push({
        mode: l.mode,
        rate_per_s: l.rate,
        offered_per_s: Math.round(r.offered),
        completions: r.ids.length,
        attested: r.ms.length,
        p50_ms: Math.round(median(r.ms)),
        p95_ms: Math.round(percentile(r.ms, 95)),
        max_ms: Math.round(Math.max(...r.ms)),
        to_checkpoint_p50_ms: Math.round(median(toCheckpoint)),
        to_checkpoint_p95_ms: Math.round(percentile(toCheckpoint, 95)),
        load: `${r.startLoad} -> ${r.endLoad}`,
      });
    }
    const med = (k: string) => median(rounds.map((x) => x[k]!.perSec));
    const sign = med("sign_only");
    const report = {
      machine: `${os.cpus().length} cores`,
      batch_size: BATCH,
      batches_in_flight: IN_FLIGHT,
      envelope_bytes: envSize,
      throughput_median_per_s: Object.fromEntries(
        Object.keys(rounds[0]!).map((k) => [k, { median: med(k), ratio_to_sign: Number((med(k) / sign).toFixed(3)) }]),
      ),
      ratio_batched_to_per_job: Number((med("attest_batched") / med("attest_per_job")).toFixed(2)),
      rounds,
      dsse_leaves_after_throughput: Number(leaves[0]?.n),
      attestation_rows_after_throughput: Number(rows[0]?.n),
      latency,
      handler_failures: failures,
    };
    console.log(JSON.stringify(report, null, 2));
  } finally {
    stopSigner = true;
    await signerLoop.catch(() => undefined);
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
