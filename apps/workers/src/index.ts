import path from "node:path";
import { createDb } from "@kiln/db";
import { bindJobTokenKek, identityKekFileFromEnv, type IdentityKek, loadOrCreateIdentityKek } from "@kiln/engine";
import { createLogger } from "@kiln/logger";
import { PgBoss, type JobResult } from "pg-boss";
import { workersEngineConfig, workersEnv, workersForgeConfig } from "./env.ts";
import type { WorkerDeps } from "./jobs/job-definition.ts";
import { archiveLogsJob } from "./jobs/archive-logs.job.ts";
import { destroyShredKeysJob } from "./jobs/destroy-shred-keys.job.ts";
import { sampleDeletionsJob } from "./jobs/sample-deletions.job.ts";
import { resealArtifactsJob } from "./jobs/reseal-artifacts.job.ts";
import { redecideSoakingPromotionsJob } from "./jobs/redecide-soaking-promotions.job.ts";
import { evictCachesJob } from "./jobs/evict-caches.job.ts";
import { enforceRetentionJob } from "./jobs/enforce-retention.job.ts";
import { rotateJobTokenKeyJob } from "./jobs/rotate-job-token-key.job.ts";
import { pruneIdTokensJob } from "./jobs/prune-id-tokens.job.ts";
import { signTlogCheckpointJob } from "./jobs/sign-tlog-checkpoint.job.ts";
import { gcArtifactsJob } from "./jobs/gc-artifacts.job.ts";
import { reconcileJob } from "./jobs/reconcile.job.ts";
import { runForgeReconcile } from "./jobs/forge-reconcile.job.ts";
import { runSchedulesJob } from "./jobs/run-schedules.job.ts";
import { JOBS } from "./jobs/registry.ts";
import { OutboxRelay } from "./relay.ts";
import { countWorkerJob, serveWorkerMetrics } from "./metrics.ts";

// Composition only: clients, queues, handlers, the relay and the reconcile ticker.
const env = workersEnv();
const log = createLogger({ service: "workers" });
const cfg = workersEngineConfig(env);
const db = createDb({ url: env.DATABASE_URL, max: 8 });
// The job-token keys are sealed under the identity KEK (issue 28): the scheduled rotation seals the
// new key with it. The web app's file (the same default path): read on first use, retried if absent.
let identityKek: Promise<IdentityKek> | null = null;
bindJobTokenKek(db, () => {
  identityKek ??= loadOrCreateIdentityKek(identityKekFileFromEnv(env)).catch((err: unknown) => {
    identityKek = null;
    throw err;
  });
  return identityKek;
});
// Not useListenNotify: pg-boss 12.38's LISTEN client drops its listeners on the first error and a
// session cut (57P01) then raises a second, unheard 'error' that kills the process
// (e2e/faults/db-sessions-cut.test.ts). Polling at 0.5 s plus bursting through backlogs instead.
const boss = new PgBoss({ connectionString: env.DATABASE_URL, max: 4 });
boss.on("error", (err: unknown) => log.error("pg-boss", { err }));
await boss.start();

const workerIds = new Map<string, string>();
const deps: WorkerDeps = {
  db,
  boss,
  cfg,
  gitCacheDir: path.resolve(env.KILN_DATA_DIR, "git-cache"),
  source: { localReposRoot: env.KILN_LOCAL_REPOS_ROOT ?? null },
  log,
  registries: env.KILN_REGISTRIES,
  poolImages: env.KILN_POOL_IMAGES,
  forge: workersForgeConfig(env),
};
for (const job of JOBS) {
  const queue = {
    retryLimit: job.retryLimit,
    retryDelay: job.retryDelaySeconds,
    retryBackoff: true,
    ...(job.retryDelayMaxSeconds ? { retryDelayMax: job.retryDelayMaxSeconds } : {}),
    expireInSeconds: job.expireInSeconds,
  };
  // A queue's policy is fixed at creation (pg-boss builds its unique index then).
  if (!(await boss.getQueue(job.name)))
    await boss.createQueue(job.name, { ...queue, policy: job.policy ?? "standard" }).catch(() => undefined);
  else await boss.updateQueue(job.name, queue);
  // Batches of two (or the job's batchSize) with burstWhenBatchFull: while a fetch comes back full
  // there is a backlog and the worker fetches again at once; with batches of one pg-boss waits a
  // polling interval between jobs, which capped a freeze backlog at localConcurrency / 0.5 s. Each
  // job settles on its own, also when its definition handles the whole fetch at once.
  const workerId = await boss.work(
    job.name,
    {
      batchSize: job.batchSize ?? 2,
      burstWhenBatchFull: true,
      perJobResults: true,
      pollingIntervalSeconds: 0.5,
      localConcurrency: job.concurrency ?? 1,
    },
    async (jobs) => {
      const results: JobResult[] = [];
      const settle = (j: { id: string }, e: unknown) => {
        countWorkerJob(job.name, e === null);
        if (e === null) return results.push({ id: j.id, status: "completed" });
        log.warn("job failed", { queue: job.name, job_id: j.id, err: e });
        return results.push({
          id: j.id,
          status: "failed",
          output: { message: e instanceof Error ? e.message : String(e) },
        });
      };
      if (job.handleBatch) {
        // A payload that does not parse fails alone; the rest go to the handler together.
        const items: { data: never; job: (typeof jobs)[number] }[] = [];
        for (const j of jobs) {
          const p = job.payload.safeParse(j.data);
          if (p.success) items.push({ data: p.data as never, job: j });
          else settle(j, p.error);
        }
        const outcomes: unknown[] = await job.handleBatch(deps, items).catch((e: unknown) => items.map(() => e));
        // A handler that answered for fewer jobs than it got has not done the rest.
        const missing = new Error(`${job.name} returned ${outcomes.length} outcomes for ${items.length} jobs`);
        items.forEach((it, i) => settle(it.job, outcomes.length === items.length ? (outcomes[i] ?? null) : missing));
        return results;
      }
      for (const j of jobs) {
        try {
          await job.handle(deps, job.payload.parse(j.data) as never, j);
          settle(j, null);
        } catch (e) {
          settle(j, e);
        }
      }
      return results;
    },
  );
  workerIds.set(job.name, workerId);
}
await boss.schedule("reconcile", "* * * * *", {});
// Unbound artifact generations and abandoned multipart uploads, after their grace period (ADR 0007).
await boss.schedule(gcArtifactsJob.name, "*/10 * * * *", {});
// Build caches: idle and over-quota entries, unfinished uploads (docs/adr/0014-build-caches.md).
await boss.schedule(evictCachesJob.name, "*/15 * * * *", {});
// Retention by provenance (docs/adr/0036): evict what expired, hourly; expiry is at whole UTC days.
await boss.schedule(enforceRetentionJob.name, "23 * * * *", {});
// Job-token signing key: replaced once it is 30 days old, checked hourly (docs/adr/0018).
await boss.schedule(rotateJobTokenKeyJob.name, "17 * * * *", {});
// ID-token records an hour past expiry and keys past their overlap (docs/adr/0024).
await boss.schedule(pruneIdTokensJob.name, "*/15 * * * *", {});
// Crypto-shredding (docs/adr/0037): due keys destroyed within a minute of their instant (reads
// refuse from the instant itself); destroyed objects' read paths probed every quarter hour; artifacts
// that must outlive their key re-sealed under a later one, hourly, within the look-ahead of its due.
await boss.schedule(destroyShredKeysJob.name, "* * * * *", {});
await boss.schedule(sampleDeletionsJob.name, "*/15 * * * *", {});
await boss.schedule(resealArtifactsJob.name, "41 * * * *", {});
// Promotions waiting only for a soak are decided again once it has passed (docs/adr/0032).
await boss.schedule(redecideSoakingPromotionsJob.name, "* * * * *", {});

// Freeze requests the relay just queued are fetched at once by this process's worker instead of at
// its next poll (up to 0.5 s: the largest part of an idle trigger -> READY, docs/benchmarks.md).
// Other worker processes still find them by polling.
const relay = new OutboxRelay(
  db,
  boss,
  env.DATABASE_URL,
  env.KILN_RELAY_POLL_MS,
  cfg.dispatchPolicy === "fifo",
  log.child({ component: "relay" }),
  (queue) => {
    const id = workerIds.get(queue);
    if (id) boss.notifyWorker(id);
  },
);
await relay.start();

// The ticker runs the sweep in-process at sub-minute resolution; the cron above is the backstop
// if this loop ever wedges.
let sweeping = false;
const ticker = setInterval(() => {
  if (sweeping) return;
  sweeping = true;
  void reconcileJob
    .handle(
      deps,
      {},
      {
        id: "tick",
        name: "reconcile",
        data: {},
        expireInSeconds: 60,
        heartbeatSeconds: null,
        retryCount: 0,
        signal: new AbortController().signal,
      },
    )
    .catch((err: unknown) => log.error("reconcile failed", { err }))
    .finally(() => {
      sweeping = false;
    });
}, env.KILN_RECONCILE_MS);

// The forge reconciler (ADR 0028): at start, then every KILN_FORGE_RECONCILE_MS; cron as the backstop.
await boss.schedule("forge-reconcile", "*/5 * * * *", {});
let forging = false;
const forgeTick = () => {
  if (forging) return;
  forging = true;
  void runForgeReconcile(deps)
    .catch((err: unknown) => log.error("forge reconcile failed", { err }))
    .finally(() => {
      forging = false;
    });
};
forgeTick();
const forgeTicker = setInterval(forgeTick, env.KILN_FORGE_RECONCILE_MS);

// The log archiver, likewise: ticked in-process, cron as the backstop (docs/adr/0006-logs.md).
await boss.schedule(archiveLogsJob.name, "* * * * *", {});
let archiving = false;
const archiveTicker = setInterval(() => {
  if (archiving) return;
  archiving = true;
  void archiveLogsJob
    .handle(
      deps,
      {},
      {
        id: "tick",
        name: archiveLogsJob.name,
        data: {},
        expireInSeconds: archiveLogsJob.expireInSeconds,
        heartbeatSeconds: null,
        retryCount: 0,
        signal: new AbortController().signal,
      },
    )
    .catch((err: unknown) => log.error("log archive failed", { err }))
    .finally(() => {
      archiving = false;
    });
}, env.KILN_LOG_ARCHIVE_MS);

// Transparency-log checkpoints (docs/adr/0026): ticked in-process so a new entry is signed into a
// checkpoint within a second or so (issue 17: 5 s); the cron is the backstop.
await boss.schedule(signTlogCheckpointJob.name, "* * * * *", {});
let signing = false;
const checkpointTicker = setInterval(() => {
  if (signing) return;
  signing = true;
  void signTlogCheckpointJob
    .handle(
      deps,
      {},
      {
        id: "tick",
        name: signTlogCheckpointJob.name,
        data: {},
        expireInSeconds: signTlogCheckpointJob.expireInSeconds,
        heartbeatSeconds: null,
        retryCount: 0,
        signal: new AbortController().signal,
      },
    )
    .catch((err: unknown) => log.error("tlog checkpoint failed", { err }))
    .finally(() => {
      signing = false;
    });
}, env.KILN_TLOG_CHECKPOINT_MS);

// The scheduler (issue 20): ticked in-process by every worker, cron as the backstop (ADR 0031).
await boss.schedule(runSchedulesJob.name, "* * * * *", {});
let scheduling = false;
const scheduleTicker = setInterval(() => {
  if (scheduling) return;
  scheduling = true;
  void runSchedulesJob
    .handle(
      deps,
      {},
      {
        id: "tick",
        name: runSchedulesJob.name,
        data: {},
        expireInSeconds: runSchedulesJob.expireInSeconds,
        heartbeatSeconds: null,
        retryCount: 0,
        signal: new AbortController().signal,
      },
    )
    .catch((err: unknown) => log.error("scheduler pass failed", { err }))
    .finally(() => {
      scheduling = false;
    });
}, env.KILN_SCHEDULE_TICK_MS);

const metricsServer = await serveWorkerMetrics({ host: env.KILN_METRICS_HOST, port: env.KILN_METRICS_PORT }, log);
log.info("workers started", { jobs: JOBS.map((j) => j.name) });

const shutdown = async () => {
  clearInterval(ticker);
  clearInterval(archiveTicker);
  clearInterval(forgeTicker);
  clearInterval(checkpointTicker);
  clearInterval(scheduleTicker);
  relay.stop();
  metricsServer?.close();
  await boss.stop({ graceful: true, timeout: 5_000 }).catch(() => undefined);
  await db.$disconnect().catch(() => undefined);
  process.exit(0);
};
process.on("SIGTERM", () => void shutdown());
process.on("SIGINT", () => void shutdown());
