import {
  cacheSettingsFromEnv,
  createObjectStore,
  evictCaches,
  objectStoreConfigFromEnv,
  type CacheEvictionReport,
  type CacheStore,
} from "@kiln/engine";
import type { Db } from "@kiln/db";
import { z } from "zod";
import { workersEnv } from "../env.ts";
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
  // Build caches: idle and over-quota entries, unfinished uploads (docs/adr/0014-build-caches.md).
  schedule: "*/15 * * * *",
  handle: async ({ db, log }) => {
    const report = await runCacheEviction(db, await storeFromEnv());
    if (report.evictedIdle + report.evictedOverQuota + report.abandonedUploads + report.objectsDeleted > 0) {
      log.info("caches evicted", { ...report });
    }
  },
});

/** One pass; the handler's whole body, exported so the run-it-twice test drives exactly it. */
export function runCacheEviction(db: Db, store: CacheStore): Promise<CacheEvictionReport> {
  return evictCaches(db, store);
}

let store: CacheStore | null = null;

// Built on first use: tests import this module with no worker environment at all.
async function storeFromEnv(): Promise<CacheStore> {
  if (store) return store;
  const env = workersEnv();
  store = {
    s3: createObjectStore(objectStoreConfigFromEnv(env)),
    bucket: env.KILN_S3_BUCKET,
    settings: cacheSettingsFromEnv(env),
  };
  return store;
}
