import {
  artifactSettingsFromEnv,
  collectArtifactGarbage,
  createObjectStore,
  objectStoreConfigFromEnv,
  type ArtifactGcReport,
  type ArtifactStore,
} from "@kiln/engine";
import type { Db } from "@kiln/db";
import { z } from "zod";
import { workersEnv } from "../env.ts";
import { defineJob } from "./job-definition.ts";

/**
 * Artifact garbage collection (issue 5): unbound generations whose attempt can never bind them and
 * abandoned multipart uploads, after the grace period. Idempotent: store deletes/aborts of what is
 * already gone succeed, and every state change is guarded, so a retried or overlapping run is a
 * no-op (run-it-twice test in packages/engine/test/artifacts). Singleton key: one pass at a time.
 */
export const gcArtifactsJob = defineJob({
  name: "gc-artifacts",
  payload: z.object({}).passthrough(),
  retryLimit: 3,
  retryDelaySeconds: 30,
  expireInSeconds: 15 * 60,
  // Unbound artifact generations and abandoned multipart uploads, after their grace period (ADR 0007).
  schedule: "*/10 * * * *",
  handle: async ({ db, log }) => {
    const report = await runArtifactGc(db, await storeFromEnv());
    if (report.abandoned + report.abortedUploads + report.abortUnsupported > 0) {
      log.info("artifact garbage collected", { ...report });
    }
  },
});

/** One pass, in batches until nothing is left (each batch re-queries, so progress is never lost). */
async function runArtifactGc(db: Db, store: ArtifactStore, maxBatches = 50): Promise<ArtifactGcReport> {
  const total: ArtifactGcReport = { abandoned: 0, abortedUploads: 0, deletedObjects: 0, abortUnsupported: 0 };
  for (let i = 0; i < maxBatches; i++) {
    const r = await collectArtifactGarbage(db, store, { limit: 100 });
    total.abandoned += r.abandoned;
    total.abortedUploads += r.abortedUploads;
    total.deletedObjects += r.deletedObjects;
    total.abortUnsupported += r.abortUnsupported;
    if (r.deletedObjects < 100) break;
  }
  return total;
}

let store: ArtifactStore | null = null;

// Built on first use: tests import this module with no worker environment at all.
async function storeFromEnv(): Promise<ArtifactStore> {
  if (store) return store;
  const env = workersEnv();
  store = {
    s3: createObjectStore(objectStoreConfigFromEnv(env)),
    bucket: env.KILN_S3_BUCKET,
    settings: artifactSettingsFromEnv(env),
  };
  return store;
}
