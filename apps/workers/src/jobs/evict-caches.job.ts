import {
  createObjectStore,
  DEFAULT_CACHE_SETTINGS,
  evictCaches,
  type CacheEvictionReport,
  type CacheStore,
} from "@kiln/engine";
import type { Db } from "@kiln/db";
import { z } from "zod";
import { defineJob } from "./job-definition.ts";

/**
 * Build cache eviction (issue 8): entries idle for KILN_CACHE_IDLE_DAYS, then least recently used
 * beyond each org's quota, uploads never finished; then their objects under caches/. Never an
 * artifact or a log. Idempotent: every state change is a guarded update, deleting a deleted object
 * succeeds, so a retried or overlapping run changes nothing (run-it-twice test in
 * packages/engine/test/caches and beside this file). Singleton by schedule: one pass at a time.
 */
export const evictCachesJob = defineJob({
  name: "evict-caches",
  payload: z.object({}).passthrough(),
  retryLimit: 3,
  retryDelaySeconds: 30,
  expireInSeconds: 15 * 60,
  handle: async ({ db }) => {
    const report = await runCacheEviction(db, await storeFromEnv());
    if (report.evictedIdle + report.evictedOverQuota + report.abandonedUploads + report.objectsDeleted > 0) {
      console.log(JSON.stringify({ level: "info", msg: "caches evicted", ...report }));
    }
  },
});

/** One pass; the handler's whole body, exported so the run-it-twice test drives exactly it. */
export function runCacheEviction(db: Db, store: CacheStore): Promise<CacheEvictionReport> {
  return evictCaches(db, store);
}

let store: CacheStore | null = null;

// env.ts parses process.env when imported; loading it lazily keeps this module importable in tests.
async function storeFromEnv(): Promise<CacheStore> {
  if (store) return store;
  const { env } = await import("../env.ts");
  store = {
    s3: createObjectStore({
      endpoint: env.S3_ENDPOINT,
      region: env.S3_REGION,
      accessKeyId: env.S3_ACCESS_KEY_ID,
      secretAccessKey: env.S3_SECRET_ACCESS_KEY,
    }),
    bucket: env.KILN_S3_BUCKET,
    settings: {
      ...DEFAULT_CACHE_SETTINGS,
      idleMs: env.KILN_CACHE_IDLE_DAYS * 24 * 3600_000,
      defaultQuotaBytes: env.KILN_CACHE_QUOTA_MIB * 1024 * 1024,
    },
  };
  return store;
}
