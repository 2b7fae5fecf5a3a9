import { createDb, type Db } from "@kiln/db";
import {
  artifactSettingsFromEnv,
  cacheSettingsFromEnv,
  createObjectStore,
  logConfigFromEnv,
  objectStoreConfigFromEnv,
  type ArtifactStore,
  type CacheStore,
  type EngineConfig,
  type KekSource,
  kekSourceFromEnv,
  type IdentityKek,
  bindJobTokenKek,
  loadOrCreateIdentityKek,
} from "@kiln/engine";
import {
  LogArchiveReader,
  PlatformKeyStore,
  ShredLogCipher,
  LogHeadCache,
  LogHub,
  LogPublisher,
  s3LogStore,
  type LogConfig,
  type LogFollowerDeps,
} from "@kiln/engine";
import { DomainError, type RetentionWindows } from "@kiln/domain";
import type { Logger } from "@kiln/logger";
import { Redis } from "ioredis";
import pg from "pg";
import { PgBoss } from "pg-boss";
import { env, identityKekFile, idTokenIssuer, webEngineConfig, type WebEnv } from "./env.ts";
import { DispatchWaiter } from "./dispatch-waiter.ts";
import { webLogger } from "./logger.ts";

// One set of clients per server process, created lazily so `next build` never connects.
interface Services {
  db: Db;
  cfg: EngineConfig;
  /** KILN_REGISTRIES: told to agents at session start (issue 30). */
  registries: ReturnType<typeof env>["KILN_REGISTRIES"];
  /** The web process's logger; request code takes a child with the ids it has. */
  log: Logger;
  boss: Promise<PgBoss>;
  waiter: DispatchWaiter;
  /** The artifact object store, created on first use (most requests never touch it). */
  artifacts: () => ArtifactStore;
  /** Build caches (issue 8): same store and bucket as artifacts, keys under caches/. */
  caches: () => CacheStore;
  /** Logs (issue 4): journal pool, Redis publisher + subscriber hub, archive reader; on first use. */
  logs: () => LogServices;
  /** Secrets' KEK (ADR 0025), read on first use and again after a rotation installs a new file. */
  keks: KekSource;
  /** Workload identity (ADR 0024): the issuer and the KEK that opens the signing key, on first use. */
  identity: () => IdentityServices;
  /** Platform retention windows (KILN_RETENTION_WINDOWS, issue 21): what orgs may shorten. */
  retention: RetentionWindows;
}

interface IdentityServices {
  issuer: string;
  /** The identity KEK; a failure to read it is ID_TOKEN.KEY_UNAVAILABLE and is retried next time. */
  kek: () => Promise<IdentityKek>;
}

interface LogServices {
  cfg: LogConfig;
  publisher: LogPublisher;
  follower: Omit<LogFollowerDeps, "db">;
}

const g = globalThis as unknown as { __kiln?: Services };

export function services(): Services {
  if (g.__kiln) return g.__kiln;
  const e = env();
  const log = webLogger();
  // The one mapping the workers use too (backoff included: completions schedule retries here).
  const cfg = webEngineConfig(e);
  // The web process only sends and fetches: the workers own pg-boss's schema and maintenance.
  const boss = new PgBoss({
    connectionString: e.DATABASE_URL,
    max: 3,
    supervise: false,
    schedule: false,
    migrate: false,
    createSchema: false,
  });
  boss.on("error", (err: unknown) => log.error("pg-boss", { err }));
  const db = createDb({ url: e.DATABASE_URL, max: e.KILN_DB_POOL });
  // One identity KEK, read on first use, opens both the ID-token signing key and the job-token keys
  // (sealed at rest, issue 28): the claim signs with the latter, every agent call checks with it.
  const identityKek = identityKekLoader(identityKekFile(e), log);
  bindJobTokenKek(db, identityKek);
  g.__kiln = {
    db,
    cfg,
    registries: e.KILN_REGISTRIES,
    log,
    boss: boss.start().then(() => boss),
    waiter: new DispatchWaiter(e.DATABASE_URL),
    artifacts: lazy(() => ({
      s3: createObjectStore(objectStoreConfigFromEnv(e)),
      bucket: e.KILN_S3_BUCKET,
      settings: artifactSettingsFromEnv(e),
      // Artifacts are sealed (ADR 0037) when both halves of a data key's wrapping are configured.
      shred:
        e.KILN_SHRED_KEY_DIR && e.KILN_SECRETS_KEK_FILE
          ? {
              db: (g.__kiln as Services).db,
              keks: (g.__kiln as Services).keks,
              platformKeys: new PlatformKeyStore(e.KILN_SHRED_KEY_DIR),
            }
          : null,
    })),
    caches: lazy(() => ({
      s3: createObjectStore(objectStoreConfigFromEnv(e)),
      bucket: e.KILN_S3_BUCKET,
      settings: cacheSettingsFromEnv(e),
    })),
    logs: lazy(() => createLogServices(e, log, g.__kiln as Services)),
    keks: kekSourceFromEnv(e),
    identity: lazy(() => ({ issuer: idTokenIssuer(e), kek: identityKek })),
    retention: e.KILN_RETENTION_WINDOWS,
  };
  return g.__kiln;
}

function createLogServices(e: WebEnv, log: Logger, svc: Services): LogServices {
  const report = (what: string) => (err: unknown) => log.error(what, { err });
  const pool = new pg.Pool({ connectionString: e.DATABASE_URL, max: e.KILN_LOG_DB_POOL });
  pool.on("error", report("log journal pool"));
  // Publishing skips while Redis is away (LogPublisher): followers re-read the journal instead.
  const redis = new Redis(e.REDIS_URL, { maxRetriesPerRequest: 1 });
  redis.on("error", report("redis (log publisher)"));
  const s3 = createObjectStore(objectStoreConfigFromEnv(e));
  return {
    cfg: logConfigFromEnv(e),
    publisher: new LogPublisher(redis, report("redis (log publish)"), e.KILN_LOG_POLL_MS),
    follower: {
      pool,
      // Shredded segments (ADR 0037) open through the org's data key; without a key dir they cannot.
      archive: new LogArchiveReader(
        s3LogStore(s3, e.KILN_S3_BUCKET),
        undefined,
        e.KILN_SHRED_KEY_DIR
          ? new ShredLogCipher({ db: svc.db, keks: svc.keks, platformKeys: new PlatformKeyStore(e.KILN_SHRED_KEY_DIR) })
          : null,
      ),
      hub: new LogHub(new Redis(e.REDIS_URL, { maxRetriesPerRequest: null }), report("redis (log subscriber)")),
      heads: new LogHeadCache(pool, Math.max(25, Math.floor(e.KILN_LOG_POLL_MS / 2))),
      pollMs: e.KILN_LOG_POLL_MS,
      keepAliveMs: e.KILN_SSE_KEEPALIVE_MS,
    },
  };
}

function identityKekLoader(file: string, log: Logger): () => Promise<IdentityKek> {
  let loaded: Promise<IdentityKek> | null = null;
  return () =>
    (loaded ??= loadOrCreateIdentityKek(file).catch((err: unknown) => {
      // Not cached: an operator who fixes the file (permissions, a mount) needs no restart.
      loaded = null;
      log.error("identity KEK unreadable", { file, err });
      throw new DomainError("ID_TOKEN.KEY_UNAVAILABLE", `the identity KEK ${file} cannot be read`);
    }));
}

function lazy<T>(make: () => T): () => T {
  let value: T | undefined;
  return () => (value ??= make());
}
