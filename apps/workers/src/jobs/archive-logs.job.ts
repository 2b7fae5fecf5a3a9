import {
  archiveLogs,
  createObjectStore,
  logConfigFromEnv,
  objectStoreConfigFromEnv,
  s3LogStore,
  type ArchiveReport,
  type LogConfig,
  type LogObjectStore,
  type SegmentSealer,
  ShredLogCipher,
  type ShredKeyDeps,
  type SqlPool,
} from "@kiln/engine";
import type { Logger } from "@kiln/logger";
import pg from "pg";
import { z } from "zod";
import { workersEnv } from "../env.ts";
import { defineJob } from "./job-definition.ts";

/**
 * The log archiver (issue 4, docs/adr/0006-logs.md): journal chunks -> immutable gzip segments in
 * object storage, then the journal rows go, in the transaction that records the segment. Ticked by
 * the workers process every KILN_LOG_ARCHIVE_MS with a cron backstop. Idempotent: deterministic
 * segment cuts and keys, a per-attempt lease and an archived_seq guard make a second or
 * overlapping run a no-op (run-it-twice test beside this file).
 */
export const archiveLogsJob = defineJob({
  name: "archive-logs",
  payload: z.object({}).passthrough(),
  retryLimit: 3,
  retryDelaySeconds: 10,
  expireInSeconds: 15 * 60,
  // Ticked in-process, the cron as the backstop (docs/adr/0006-logs.md).
  schedule: "* * * * *",
  tick: { everyMs: (env) => env.KILN_LOG_ARCHIVE_MS, failure: "log archive failed" },
  handle: async ({ runtime: rt, log }) => {
    const r = await runLogArchive(await runtimeFromEnv(rt.shred, log));
    if (r.segments + r.indexed > 0) log.info("logs archived", { ...r });
  },
});

export interface LogArchiveRuntime {
  pool: SqlPool;
  store: LogObjectStore;
  cfg: LogConfig;
  /** Logs archived at once (KILN_LOG_ARCHIVE_CONCURRENCY). */
  concurrency?: number;
  /** Seals segments under the org's data key of the day (ADR 0037); absent: stored unencrypted. */
  shred?: SegmentSealer;
}

/** One pass: batches until a batch finds nothing more to do. */
export async function runLogArchive(rt: LogArchiveRuntime, maxBatches = 20): Promise<ArchiveReport> {
  const total: ArchiveReport = { attempts: 0, segments: 0, bytes: 0, indexed: 0 };
  for (let i = 0; i < maxBatches; i++) {
    const r = await archiveLogs(rt.pool, rt.store, rt.cfg, {
      limit: 50,
      concurrency: rt.concurrency ?? 1,
      ...(rt.shred ? { shred: rt.shred } : {}),
    });
    total.attempts += r.attempts;
    total.segments += r.segments;
    total.bytes += r.bytes;
    total.indexed += r.indexed;
    if (r.attempts === 0) break;
  }
  return total;
}

let runtime: LogArchiveRuntime | null = null;

// Built on first use: tests import this module with no worker environment at all.
async function runtimeFromEnv(shred: ShredKeyDeps | null, log: Logger): Promise<LogArchiveRuntime> {
  if (runtime) return runtime;
  const env = workersEnv();
  const pool = new pg.Pool({ connectionString: env.DATABASE_URL, max: env.KILN_LOG_ARCHIVE_CONCURRENCY + 1 });
  pool.on("error", (err) => log.error("log archive pool", { err }));
  const s3 = createObjectStore(objectStoreConfigFromEnv(env));
  runtime = {
    pool,
    store: s3LogStore(s3, env.KILN_S3_BUCKET),
    cfg: logConfigFromEnv(env),
    concurrency: env.KILN_LOG_ARCHIVE_CONCURRENCY,
  };
  if (shred) runtime.shred = new ShredLogCipher(shred);
  else
    log.warn(
      "crypto-shredding is not configured (KILN_SHRED_KEY_DIR, KILN_SECRETS_KEK_FILE): logs archive unencrypted",
    );
  return runtime;
}
