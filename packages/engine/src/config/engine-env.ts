// The engine's environment variables, one schema for every app that runs engine code (web and
// workers). Each app's env.ts composes this schema with its own variables and parses process.env
// once at boot; the functions below map the parsed values to the engine's config objects, so the
// two apps cannot drift apart again (web once built its EngineConfig by hand and lost the backoff).
import path from "node:path";
import { z } from "zod";
import { platformRetentionWindows, retentionOverridesSchema, type RetentionWindows } from "@kiln/domain";
import { type ArtifactSettings, DEFAULT_ARTIFACT_SETTINGS } from "../artifacts/index.ts";
import { type CacheSettings, DEFAULT_CACHE_SETTINGS } from "../caches/index.ts";
import { DEFAULT_LOG_CONFIG, type LogConfig } from "../logs/index.ts";
import type { ObjectStoreConfig } from "../storage/index.ts";
import { DEFAULT_ENGINE_CONFIG, type EngineConfig } from "./engine-config.ts";
import { DEFAULT_FORGE_CONFIG, type ForgeConfig, parseSecretsKey } from "../forge/index.ts";

const MIB = 1024 * 1024;
const int = () => z.coerce.number().int();
/** Unset and empty mean the same thing: use the default. */
const blankIsUnset = (v: unknown) => (v === "" ? undefined : v);

export const engineEnvSchema = z.object({
  /**
   * Crypto-shredding (issue 21, ADR 0037): the directory of per-due-day platform keys (mode 0700,
   * one 0600 file per day), shared by the web app and the workers, never in the database or its
   * backups. Unset (the default): archived logs are stored unencrypted, as before.
   */
  KILN_SHRED_KEY_DIR: z.preprocess((v) => (v === "" ? undefined : v), z.string().startsWith("/").optional()),
  /**
   * The identity KEK (32 bytes, base64) that seals the ID-token signing keys (ADR 0024) and the
   * job-token HMAC keys (ADR 0018, issue 28) at rest. Unset: <KILN_DATA_DIR>/identity-kek, created
   * with mode 0600 on first use. Every control-plane process (web, workers, the CLI) must read the
   * same file: the web app signs and checks job tokens, the workers rotate their key.
   */
  KILN_IDENTITY_KEK_FILE: z.preprocess(blankIsUnset, z.string().optional()),
  /** Attempt lease TTL; agents' watchdogs kill sandboxes at the same bound. */
  KILN_LEASE_TTL_MS: int().min(500).default(DEFAULT_ENGINE_CONFIG.leaseTtlMs),
  /** How often agents should heartbeat (a fraction of the TTL). */
  KILN_HEARTBEAT_MS: int().min(100).default(DEFAULT_ENGINE_CONFIG.heartbeatMs),
  /** Automatic retries after platform failures per job. */
  KILN_RETRY_BUDGET: int().min(0).max(10).default(DEFAULT_ENGINE_CONFIG.retryBudget),
  /** Backoff before a platform-failure retry: base and cap. Completions (in web) and the
   * reconciler (in workers) both schedule retries, so both read these. */
  KILN_BACKOFF_BASE_MS: int().min(0).default(DEFAULT_ENGINE_CONFIG.backoffBaseMs),
  KILN_BACKOFF_MAX_MS: int().min(0).default(DEFAULT_ENGINE_CONFIG.backoffMaxMs),
  /** Claim order: weighted fair queuing with lending (default) or plain FIFO (benchmark baseline).
   * Preemption for returning lent capacity (workers) runs only under "fair". */
  KILN_DISPATCH_POLICY: z.enum(["fair", "fifo"]).default(DEFAULT_ENGINE_CONFIG.dispatchPolicy),
  /** How long one process's ranking of a pool's queue serves claims before it is reloaded. */
  KILN_DISPATCH_VIEW_MS: int().min(0).max(5_000).default(DEFAULT_ENGINE_CONFIG.dispatchViewMs),
  /** Issue 18 (ADR 0033): the bound on a host's clock drift over one lease; a silent deploy attempt's
   * environment lock is released only this long after its lease ran out (the watchdog's kill bound). */
  KILN_CLOCK_SKEW_BOUND_MS: int().min(0).max(600_000).default(DEFAULT_ENGINE_CONFIG.clockSkewBoundMs),

  /** S3-compatible object store for artifacts, caches and archived logs; unset means AWS's regional endpoint. */
  S3_ENDPOINT: z.preprocess(blankIsUnset, z.string().url().optional()),
  /** Bucket Kiln's objects live in (`npm run up` creates "kiln" in its local s3rver). */
  KILN_S3_BUCKET: z.string().min(1).default("kiln"),
  /** Region used for request signing. */
  S3_REGION: z.string().min(1).default("us-east-1"),
  /** Store credentials; the defaults are s3rver's fixed development pair. */
  S3_ACCESS_KEY_ID: z.string().min(1).default("S3RVER"),
  S3_SECRET_ACCESS_KEY: z.string().min(1).default("S3RVER"),

  /** Artifact multipart part size in MiB (5..5120; docs/adr/0007-artifacts.md). */
  KILN_ARTIFACT_PART_MIB: int()
    .min(5)
    .max(5120)
    .default(DEFAULT_ARTIFACT_SETTINGS.partSizeBytes / MIB),
  /** Lifetime of presigned part-upload URLs, seconds. */
  KILN_ARTIFACT_UPLOAD_URL_TTL_S: int()
    .min(60)
    .max(7 * 24 * 3600)
    .default(DEFAULT_ARTIFACT_SETTINGS.uploadUrlTtlSec),
  /** Lifetime of presigned download URLs (agent restores, the public 302), seconds. */
  KILN_ARTIFACT_DOWNLOAD_URL_TTL_S: int()
    .min(10)
    .max(7 * 24 * 3600)
    .default(DEFAULT_ARTIFACT_SETTINGS.downloadUrlTtlSec),
  /** Unbound artifact generations and abandoned multipart uploads are collected this long after their attempt ended. */
  KILN_ARTIFACT_GC_GRACE_MS: int().min(0).default(DEFAULT_ARTIFACT_SETTINGS.gcGraceMs),

  /** Build caches (issue 8): lifetime of a restore's presigned GET, seconds; a restore slower than this is a miss. */
  KILN_CACHE_DOWNLOAD_URL_TTL_S: int()
    .min(10)
    .max(24 * 3600)
    .default(DEFAULT_CACHE_SETTINGS.downloadUrlTtlSec),
  /** Per-org cache byte quota in MiB when the org has none of its own (LRU eviction beyond it). */
  KILN_CACHE_QUOTA_MIB: int()
    .min(1)
    .default(DEFAULT_CACHE_SETTINGS.defaultQuotaBytes / MIB),
  /** Build cache entries unused this many days are evicted whatever the quota (issue 8: 7). */
  KILN_CACHE_IDLE_DAYS: int()
    .min(1)
    .max(365)
    .default(DEFAULT_CACHE_SETTINGS.idleMs / (24 * 3600_000)),

  /** Per-attempt log limit (stdout + stderr), enforced by ingest as well as by the agent. */
  KILN_LOG_MAX_BYTES: int().min(1024).default(DEFAULT_LOG_CONFIG.maxBytesPerAttempt),
  /** Journal budget: acknowledged, unarchived log bytes; past it ingest answers 503 + Retry-After. */
  KILN_LOG_JOURNAL_MAX_BYTES: int().min(MIB).default(DEFAULT_LOG_CONFIG.journalMaxBytes),
  /** Target size of an archived log segment; a still-open log is archived once this much is journaled. */
  KILN_LOG_SEGMENT_BYTES: int().min(1024).default(DEFAULT_LOG_CONFIG.segmentTargetBytes),

  /**
   * Retention windows in days (issue 21, docs/adr/0036) as JSON, any subset of kind x class over
   * the seed's defaults, e.g. {"artifact":{"other":7}}. Kinds: artifact, log, log_searchable,
   * run_metadata; classes: release, default_branch, other. Unset: artifacts 400/90/14, logs
   * 400/90/90, run metadata 400. Orgs may shorten these, never lengthen them.
   */
  KILN_RETENTION_WINDOWS: z.preprocess(blankIsUnset, z.string().optional()).transform((v, ctx): RetentionWindows => {
    try {
      return platformRetentionWindows(v === undefined ? undefined : retentionOverridesSchema.parse(JSON.parse(v)));
    } catch (err) {
      ctx.addIssue({
        code: "custom",
        message: `KILN_RETENTION_WINDOWS: ${err instanceof Error ? err.message : String(err)}`,
      });
      return z.NEVER;
    }
  }),

  /** The forge loop (docs/adr/0028, docs/forge.md). GitHub's REST API, or GitHub Enterprise
   * (https://host/api/v3), Gitea or Forgejo (same status call). */
  KILN_GITHUB_API_URL: z.preprocess(blankIsUnset, z.string().url().default(DEFAULT_FORGE_CONFIG.apiUrl)),
  /** The dashboard's public origin (e.g. https://ci.example.com): statuses link to run pages under
   * it, and the reconciler finds a repo's hook by its URL. Unset: statuses carry no link. */
  KILN_PUBLIC_URL: z.preprocess(blankIsUnset, z.string().url().optional()),
  /** 32 random bytes, base64 (openssl rand -base64 32): seals per-repo forge tokens at rest. Unset:
   * no forge token can be stored or used (GitHub App credentials need none). */
  KILN_SECRETS_KEY: z.preprocess(blankIsUnset, z.string().optional()),
  /** A GitHub App: its id, and a file with its private key (PEM). Both or neither. */
  KILN_GITHUB_APP_ID: z.preprocess(blankIsUnset, z.coerce.number().int().positive().optional()),
  KILN_GITHUB_APP_PRIVATE_KEY_FILE: z.preprocess(blankIsUnset, z.string().optional()),
  /** The App's webhook secret (issue 28): a delivery's `installation.id` is believed only when it is
   * signed with it; a delivery signed with a repo's own secret that names an installation is refused.
   * Unset: no installation is ever bound, so the App writes nothing. */
  KILN_GITHUB_APP_WEBHOOK_SECRET: z.preprocess(blankIsUnset, z.string().min(8).optional()),
  /** Per request to the forge. */
  KILN_FORGE_TIMEOUT_MS: int().min(100).max(60_000).default(DEFAULT_FORGE_CONFIG.requestTimeoutMs),
});

/** The parsed engine variables; an app's parsed env (a superset) is accepted wherever this is. */
export type EngineEnv = z.infer<typeof engineEnvSchema>;

/** Where the identity KEK lives: KILN_IDENTITY_KEK_FILE, else <KILN_DATA_DIR>/identity-kek. */
export function identityKekFileFromEnv(env: EngineEnv & { KILN_DATA_DIR: string }): string {
  return env.KILN_IDENTITY_KEK_FILE ?? path.join(env.KILN_DATA_DIR, "identity-kek");
}

export function engineConfigFromEnv(env: EngineEnv): EngineConfig {
  return {
    ...DEFAULT_ENGINE_CONFIG,
    leaseTtlMs: env.KILN_LEASE_TTL_MS,
    heartbeatMs: env.KILN_HEARTBEAT_MS,
    retryBudget: env.KILN_RETRY_BUDGET,
    backoffBaseMs: env.KILN_BACKOFF_BASE_MS,
    backoffMaxMs: env.KILN_BACKOFF_MAX_MS,
    dispatchPolicy: env.KILN_DISPATCH_POLICY,
    dispatchViewMs: env.KILN_DISPATCH_VIEW_MS,
    clockSkewBoundMs: env.KILN_CLOCK_SKEW_BOUND_MS,
    retention: env.KILN_RETENTION_WINDOWS,
    // A lost hint is re-sent after at most one lease TTL (short TTLs in tests), never under 2 s.
    redispatchAfterMs: Math.max(2_000, Math.min(DEFAULT_ENGINE_CONFIG.redispatchAfterMs, env.KILN_LEASE_TTL_MS)),
  };
}

export function objectStoreConfigFromEnv(env: EngineEnv): ObjectStoreConfig {
  return {
    endpoint: env.S3_ENDPOINT,
    region: env.S3_REGION,
    accessKeyId: env.S3_ACCESS_KEY_ID,
    secretAccessKey: env.S3_SECRET_ACCESS_KEY,
  };
}

export function artifactSettingsFromEnv(env: EngineEnv): ArtifactSettings {
  return {
    ...DEFAULT_ARTIFACT_SETTINGS,
    partSizeBytes: env.KILN_ARTIFACT_PART_MIB * MIB,
    uploadUrlTtlSec: env.KILN_ARTIFACT_UPLOAD_URL_TTL_S,
    downloadUrlTtlSec: env.KILN_ARTIFACT_DOWNLOAD_URL_TTL_S,
    gcGraceMs: env.KILN_ARTIFACT_GC_GRACE_MS,
    retention: env.KILN_RETENTION_WINDOWS,
  };
}

export function cacheSettingsFromEnv(env: EngineEnv): CacheSettings {
  return {
    ...DEFAULT_CACHE_SETTINGS,
    downloadUrlTtlSec: env.KILN_CACHE_DOWNLOAD_URL_TTL_S,
    defaultQuotaBytes: env.KILN_CACHE_QUOTA_MIB * MIB,
    idleMs: env.KILN_CACHE_IDLE_DAYS * 24 * 3600_000,
  };
}

export function logConfigFromEnv(env: EngineEnv): LogConfig {
  return {
    ...DEFAULT_LOG_CONFIG,
    maxBytesPerAttempt: env.KILN_LOG_MAX_BYTES,
    journalMaxBytes: env.KILN_LOG_JOURNAL_MAX_BYTES,
    segmentTargetBytes: env.KILN_LOG_SEGMENT_BYTES,
    retention: env.KILN_RETENTION_WINDOWS,
  };
}

/** Reads the App's private key file once, at boot: a missing file fails the process, loudly. */
export function forgeConfigFromEnv(env: EngineEnv, readFile: (path: string) => string): ForgeConfig {
  if ((env.KILN_GITHUB_APP_ID === undefined) !== (env.KILN_GITHUB_APP_PRIVATE_KEY_FILE === undefined))
    throw new Error("KILN_GITHUB_APP_ID and KILN_GITHUB_APP_PRIVATE_KEY_FILE go together: set both or neither");
  return {
    apiUrl: env.KILN_GITHUB_API_URL,
    publicUrl: env.KILN_PUBLIC_URL ?? null,
    secretsKey: env.KILN_SECRETS_KEY ? parseSecretsKey(env.KILN_SECRETS_KEY) : null,
    app:
      env.KILN_GITHUB_APP_ID !== undefined && env.KILN_GITHUB_APP_PRIVATE_KEY_FILE
        ? {
            id: env.KILN_GITHUB_APP_ID,
            privateKeyPem: readFile(env.KILN_GITHUB_APP_PRIVATE_KEY_FILE),
            ...(env.KILN_GITHUB_APP_WEBHOOK_SECRET ? { webhookSecret: env.KILN_GITHUB_APP_WEBHOOK_SECRET } : {}),
          }
        : null,
    requestTimeoutMs: env.KILN_FORGE_TIMEOUT_MS,
  };
}
