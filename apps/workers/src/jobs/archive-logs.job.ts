import {
  archiveLogs,
  createObjectStore,
  DEFAULT_LOG_CONFIG,
  s3LogStore,
  type ArchiveReport,
  type LogConfig,
  type LogObjectStore,
  type SqlPool,
} from "@kiln/engine";
import pg from "pg";
import { z } from "zod";
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
  handle: async () => {
    const r = await runLogArchive(await runtimeFromEnv());
    if (r.segments + r.indexed > 0) console.log(JSON.stringify({ level: "info", msg: "logs archived", ...r }));
  },
});

export interface LogArchiveRuntime {
  pool: SqlPool;
  store: LogObjectStore;
  cfg: LogConfig;
  /** Logs archived at once (KILN_LOG_ARCHIVE_CONCURRENCY). */
  concurrency?: number;
}

/** One pass: batches until a batch finds nothing more to do. */
export async function runLogArchive(rt: LogArchiveRuntime, maxBatches = 20): Promise<ArchiveReport> {
  const total: ArchiveReport = { attempts: 0, segments: 0, bytes: 0, indexed: 0 };
  for (let i = 0; i < maxBatches; i++) {
    const r = await archiveLogs(rt.pool, rt.store, rt.cfg, { limit: 50, concurrency: rt.concurrency ?? 1 });
    total.attempts += r.attempts;
    total.segments += r.segments;
    total.bytes += r.bytes;
    total.indexed += r.indexed;
    if (r.attempts === 0) break;
  }
  return total;
}

let runtime: LogArchiveRuntime | null = null;

// env.ts parses process.env when imported; loading it lazily keeps this module importable in tests.
async function runtimeFromEnv(): Promise<LogArchiveRuntime> {
  if (runtime) return runtime;
  const { env } = await import("../env.ts");
  const pool = new pg.Pool({ connectionString: env.DATABASE_URL, max: env.KILN_LOG_ARCHIVE_CONCURRENCY + 1 });
  pool.on("error", (e) =>
    console.error(JSON.stringify({ level: "error", msg: "log archive pool", err: String(e).slice(0, 300) })),
  );
  const s3 = createObjectStore({
    endpoint: env.S3_ENDPOINT,
    region: env.S3_REGION,
    accessKeyId: env.S3_ACCESS_KEY_ID,
    secretAccessKey: env.S3_SECRET_ACCESS_KEY,
  });
  runtime = {
    pool,
    store: s3LogStore(s3, env.KILN_S3_BUCKET),
    cfg: { ...DEFAULT_LOG_CONFIG, segmentTargetBytes: env.KILN_LOG_SEGMENT_BYTES },
    concurrency: env.KILN_LOG_ARCHIVE_CONCURRENCY,
  };
  return runtime;
}
