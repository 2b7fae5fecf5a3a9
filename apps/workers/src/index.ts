import path from "node:path";
import { createDb } from "@kiln/db";
import { bindJobTokenKek, identityKekFileFromEnv, type IdentityKek, loadOrCreateIdentityKek } from "@kiln/engine";
import { createLogger } from "@kiln/logger";
import { PgBoss, type Job, type JobResult } from "pg-boss";
import { workersEngineConfig, workersEnv, workersForgeConfig } from "./env.ts";
import type { WorkerDeps } from "./jobs/job-definition.ts";
import { JOBS } from "./jobs/registry.ts";
import { OutboxRelay } from "./relay.ts";
import { buildWorkerRuntime } from "./worker-runtime.ts";
import { countWorkerJob, serveWorkerMetrics } from "./metrics.ts";

// Composition only: clients, runtimes, queues, handlers, schedules, the relay and the tickers.
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
  runtime: buildWorkerRuntime(env, db, log),
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
// Each job's own cron (the backstop where it also ticks), from its definition.
for (const job of JOBS) if (job.schedule) await boss.schedule(job.name, job.schedule, {});

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

// Jobs that tick run in-process at sub-minute resolution, each a pass at a time; their cron above
// is the backstop if a ticker ever wedges.
const tickers = JOBS.flatMap((job) => {
  if (!job.tick) return [];
  const { everyMs, atStart, failure } = job.tick;
  let running = false;
  const tick = () => {
    if (running) return;
    running = true;
    void job
      // A tick is the empty payload the cron queues, through the job's own schema.
      .handle(deps, job.payload.parse({}) as never, tickJob(job.name, job.expireInSeconds))
      .catch((err: unknown) => log.error(failure, { err }))
      .finally(() => {
        running = false;
      });
  };
  if (atStart) tick();
  return [setInterval(tick, everyMs(env))];
});

/** The pg-boss job a tick's handler is given: no queue row behind it. */
function tickJob(name: string, expireInSeconds: number): Job<unknown> {
  return {
    id: "tick",
    name,
    data: {},
    expireInSeconds,
    heartbeatSeconds: null,
    retryCount: 0,
    signal: new AbortController().signal,
  };
}

const metricsServer = await serveWorkerMetrics({ host: env.KILN_METRICS_HOST, port: env.KILN_METRICS_PORT }, log);
log.info("workers started", { jobs: JOBS.map((j) => j.name) });

const shutdown = async () => {
  for (const t of tickers) clearInterval(t);
  relay.stop();
  metricsServer?.close();
  await boss.stop({ graceful: true, timeout: 5_000 }).catch(() => undefined);
  await db.$disconnect().catch(() => undefined);
  process.exit(0);
};
process.on("SIGTERM", () => void shutdown());
process.on("SIGINT", () => void shutdown());
