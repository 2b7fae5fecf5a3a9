import {
  artifactSettingsFromEnv,
  createObjectStore,
  objectStoreConfigFromEnv,
  runRetentionPass,
  type ArtifactStore,
  type RetentionPassOptions,
  type RetentionPassReport,
} from "@kiln/engine";
import type { Db } from "@kiln/db";
import { z } from "zod";
import { workersEnv } from "../env.ts";
import { defineJob } from "./job-definition.ts";

/**
 * Retention by provenance (issue 21, docs/adr/0036): evicts artifacts, logs and run metadata whose
 * class's window has passed, unless an environment pointer, its history, a hold or a live run
 * still needs them; every eviction is audited, then the bytes are deleted. Idempotent: each item is
 * a guarded update under its row lock and deleting a deleted object succeeds, so a retried or
 * overlapping run changes nothing (run-it-twice test beside this file). `kiln retention plan`
 * runs the same code on a transaction it rolls back. Stately: one pass at a time.
 */
export const enforceRetentionJob = defineJob({
  name: "enforce-retention",
  payload: z.object({}).passthrough(),
  retryLimit: 3,
  retryDelaySeconds: 60,
  expireInSeconds: 30 * 60,
  // Retention by provenance (docs/adr/0036): evict what expired, hourly; expiry is at whole UTC days.
  schedule: "23 * * * *",
  policy: "stately",
  handle: async ({ db, log }) => {
    const env = workersEnv();
    const report = await runRetention(db, await storeFromEnv(), env.KILN_RETENTION_WINDOWS, new Date());
    const n = report.evicted.artifact + report.evicted.log + report.evicted.run_metadata + report.objectsDeleted;
    if (n > 0 || report.stampedRuns > 0)
      log.info("retention pass", {
        evicted: report.evicted,
        kept: report.kept.length,
        objects_deleted: report.objectsDeleted,
        stamped_runs: report.stampedRuns,
      });
  },
});

/** One pass at `at`; the handler's whole body, exported so the run-it-twice test drives exactly it. */
export function runRetention(
  db: Db,
  store: ArtifactStore,
  windows: RetentionPassOptions["windows"],
  at: Date,
): Promise<RetentionPassReport> {
  return runRetentionPass(db, store, { at, windows });
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
