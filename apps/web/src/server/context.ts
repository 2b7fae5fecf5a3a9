import { createDb, type Db } from "@kiln/db";
import {
  createObjectStore,
  DEFAULT_ARTIFACT_SETTINGS,
  DEFAULT_CACHE_SETTINGS,
  DEFAULT_ENGINE_CONFIG,
  type ArtifactStore,
  type CacheStore,
  type EngineConfig,
} from "@kiln/engine";
import {
  DEFAULT_LOG_CONFIG,
  LogArchiveReader,
  LogHeadCache,
  LogHub,
  LogPublisher,
  s3LogStore,
  type LogConfig,
  type LogFollowerDeps,
} from "@kiln/engine";
import { Redis } from "ioredis";
import pg from "pg";
import { PgBoss } from "pg-boss";
import { env, type WebEnv } from "./env.ts";
import { DispatchWaiter } from "./dispatch-waiter.ts";

// One set of clients per server process, created lazily so `next build` never connects.
interface Services {
  db: Db;
  cfg: EngineConfig;
  boss: Promise<PgBoss>;
  waiter: DispatchWaiter;
  /** The artifact object store, created on first use (most requests never touch it). */
  artifacts: () => ArtifactStore;
  /** Build caches (issue 8): same store and bucket as artifacts, keys under caches/. */
  caches: () => CacheStore;
  /** Logs (issue 4): journal pool, Redis publisher + subscriber hub, archive reader; on first use. */
  logs: () => LogServices;
}

export interface LogServices {
  cfg: LogConfig;
  publisher: LogPublisher;
  follower: Omit<LogFollowerDeps, "db">;
}

const g = globalThis as unknown as { __kiln?: Services };

export function services(): Services {
  if (g.__kiln) return g.__kiln;
  const e = env();
  const cfg: EngineConfig = {
    ...DEFAULT_ENGINE_CONFIG,
    leaseTtlMs: e.KILN_LEASE_TTL_MS,
    heartbeatMs: e.KILN_HEARTBEAT_MS,
    retryBudget: e.KILN_RETRY_BUDGET,
    dispatchPolicy: e.KILN_DISPATCH_POLICY,
    dispatchViewMs: e.KILN_DISPATCH_VIEW_MS,
    egressPlatformHosts: platformHosts(e),
  };
  // The web process only sends and fetches: the workers own pg-boss's schema and maintenance.
  const boss = new PgBoss({
    connectionString: e.DATABASE_URL,
    max: 3,
    supervise: false,
    schedule: false,
    migrate: false,
    createSchema: false,
  });
  boss.on("error", (err: unknown) =>
    console.error(JSON.stringify({ level: "error", msg: "pg-boss", err: String(err) })),
  );
  g.__kiln = {
    db: createDb({ url: e.DATABASE_URL, max: e.KILN_DB_POOL }),
    cfg,
    boss: boss.start().then(() => boss),
    waiter: new DispatchWaiter(e.DATABASE_URL),
    artifacts: lazy(() => ({
      s3: createObjectStore({
        endpoint: e.S3_ENDPOINT,
        region: e.S3_REGION,
        accessKeyId: e.S3_ACCESS_KEY_ID,
        secretAccessKey: e.S3_SECRET_ACCESS_KEY,
      }),
      bucket: e.KILN_S3_BUCKET,
      settings: {
        ...DEFAULT_ARTIFACT_SETTINGS,
        partSizeBytes: e.KILN_ARTIFACT_PART_MIB * 1024 * 1024,
        uploadUrlTtlSec: e.KILN_ARTIFACT_UPLOAD_URL_TTL_S,
        downloadUrlTtlSec: e.KILN_ARTIFACT_DOWNLOAD_URL_TTL_S,
      },
    })),
    caches: lazy(() => ({
      s3: createObjectStore({
        endpoint: e.S3_ENDPOINT,
        region: e.S3_REGION,
        accessKeyId: e.S3_ACCESS_KEY_ID,
        secretAccessKey: e.S3_SECRET_ACCESS_KEY,
      }),
      bucket: e.KILN_S3_BUCKET,
      settings: {
        ...DEFAULT_CACHE_SETTINGS,
        downloadUrlTtlSec: e.KILN_CACHE_DOWNLOAD_URL_TTL_S,
        defaultQuotaBytes: e.KILN_CACHE_QUOTA_MIB * 1024 * 1024,
      },
    })),
    logs: lazy(() => createLogServices(e)),
  };
  return g.__kiln;
}

function createLogServices(e: WebEnv): LogServices {
  const report = (what: string) => (err: unknown) =>
    console.error(JSON.stringify({ level: "error", msg: what, err: String(err).slice(0, 300) }));
  const pool = new pg.Pool({ connectionString: e.DATABASE_URL, max: e.KILN_LOG_DB_POOL });
  pool.on("error", report("log journal pool"));
  // Publishing skips while Redis is away (LogPublisher): followers re-read the journal instead.
  const redis = new Redis(e.REDIS_URL, { maxRetriesPerRequest: 1 });
  redis.on("error", report("redis (log publisher)"));
  const s3 = createObjectStore({
    endpoint: e.S3_ENDPOINT,
    region: e.S3_REGION,
    accessKeyId: e.S3_ACCESS_KEY_ID,
    secretAccessKey: e.S3_SECRET_ACCESS_KEY,
  });
  return {
    cfg: {
      ...DEFAULT_LOG_CONFIG,
      maxBytesPerAttempt: e.KILN_LOG_MAX_BYTES,
      journalMaxBytes: e.KILN_LOG_JOURNAL_MAX_BYTES,
    },
    publisher: new LogPublisher(redis, report("redis (log publish)"), e.KILN_LOG_POLL_MS),
    follower: {
      pool,
      archive: new LogArchiveReader(s3LogStore(s3, e.KILN_S3_BUCKET)),
      hub: new LogHub(new Redis(e.REDIS_URL, { maxRetriesPerRequest: null }), report("redis (log subscriber)")),
      heads: new LogHeadCache(pool, Math.max(25, Math.floor(e.KILN_LOG_POLL_MS / 2))),
      pollMs: e.KILN_LOG_POLL_MS,
      keepAliveMs: e.KILN_SSE_KEEPALIVE_MS,
    },
  };
}

function lazy<T>(make: () => T): () => T {
  let value: T | undefined;
  return () => (value ??= make());
}

/** The platform's own endpoints a sandbox may reach (mediated egress, docs/adr/0013). */
function platformHosts(e: WebEnv): string[] {
  const listed = e.KILN_EGRESS_PLATFORM_HOSTS.split(",")
    .map((h) => h.trim())
    .filter((h) => h.length > 0);
  const s3 = e.S3_ENDPOINT
    ? [new URL(e.S3_ENDPOINT).host]
    : [`s3.${e.S3_REGION}.amazonaws.com`, `*.s3.${e.S3_REGION}.amazonaws.com`];
  return [...listed, ...s3];
}
