import type { S3Client } from "@aws-sdk/client-s3";
import { DEFAULT_CACHE_LIMITS, type CacheLimits } from "@kiln/domain";

/** Cache knobs. Apps map them from env with cacheSettingsFromEnv (config/engine-env.ts). */
export interface CacheSettings {
  /** Lifetime of the presigned PUT for one archive (single PUT: entries are at most 5 GiB). */
  uploadUrlTtlSec: number;
  /** Lifetime of a restore's presigned GET; a slow restore past it is a miss, not a retry loop. */
  downloadUrlTtlSec: number;
  /** Per-org byte quota when org.cache_quota_bytes is null. */
  defaultQuotaBytes: number;
  /** Entries unused this long are evicted whatever the quota (issue 8: 7 days). */
  idleMs: number;
  /** Uploads never completed are abandoned this long after they were opened. */
  abandonUploadsAfterMs: number;
  limits: CacheLimits;
}

export const DEFAULT_CACHE_SETTINGS: CacheSettings = {
  uploadUrlTtlSec: 3600,
  downloadUrlTtlSec: 900,
  defaultQuotaBytes: 10 * 1024 ** 3,
  idleMs: 7 * 24 * 3600_000,
  abandonUploadsAfterMs: 6 * 3600_000,
  limits: DEFAULT_CACHE_LIMITS,
};

/** The object store and bucket cache archives live in (under caches/), plus settings. */
export interface CacheStore {
  s3: S3Client;
  bucket: string;
  settings: CacheSettings;
}
