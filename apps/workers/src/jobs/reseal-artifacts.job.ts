import {
  artifactSettingsFromEnv,
  createObjectStore,
  objectStoreConfigFromEnv,
  resealHeldArtifacts,
  type ArtifactStore,
  type ResealReport,
  type ShredKeyDeps,
} from "@kiln/engine";
import type { Db } from "@kiln/db";
import { z } from "zod";
import { workersEnv } from "../env.ts";
import { defineJob } from "./job-definition.ts";

/**
 * The re-sealer (issue 21, docs/adr/0037 "Reseal"): an artifact that must outlive its day's data key
 * (a hold, an environment pointer or its history, a consumer — retention's blockers) is sealed again
 * under a key that dies later, into a new object, within KILN_SHRED_RESEAL_LOOKAHEAD_H of its key's
 * due; the destroyer then kills the old key without taking it along. Hourly, stately (one pass at a
 * time). Idempotent: a moved artifact's key is due past the look-ahead, and the move is a guarded
 * update, so a retried or overlapping run changes nothing (run-it-twice test in
 * packages/engine/test/shredding/reseal-artifacts.test.ts).
 */
export const resealArtifactsJob = defineJob({
  name: "reseal-artifacts",
  payload: z.object({}).passthrough(),
  retryLimit: 3,
  retryDelaySeconds: 60,
  expireInSeconds: 60 * 60,
  // Hourly, within the look-ahead of a key's due (ADR 0037).
  schedule: "41 * * * *",
  policy: "stately",
  handle: async ({ db, runtime, log }) => {
    const s = storeFromEnv(runtime.shred);
    if (!s.shred) return;
    const r = await runReseal(db, s, new Date(), workersEnv().KILN_SHRED_RESEAL_LOOKAHEAD_H * 3_600_000);
    for (const f of r.failed) log.error("artifact could not be re-sealed before its key dies", { ...f });
    if (r.resealed + r.skipped > 0) log.info("artifacts re-sealed", { resealed: r.resealed, skipped: r.skipped });
  },
});

/** Batches until a short one; the handler's whole body, exported so a test can drive exactly it. */
export async function runReseal(db: Db, store: ArtifactStore, now: Date, lookaheadMs: number): Promise<ResealReport> {
  const total: ResealReport = { resealed: 0, skipped: 0, failed: [] };
  for (let i = 0; i < 20; i++) {
    const r = await resealHeldArtifacts(db, store, { now, lookaheadMs, limit: 100 });
    total.resealed += r.resealed;
    total.skipped += r.skipped;
    total.failed.push(...r.failed);
    // Failed and skipped ones are still candidates: only progress is a reason for another batch.
    if (r.resealed === 0 || r.resealed + r.skipped + r.failed.length < 100) break;
  }
  return total;
}

let store: ArtifactStore | null = null;

// Built on first use: tests import this module with no worker environment at all.
function storeFromEnv(shred: ShredKeyDeps | null): ArtifactStore {
  if (store) return store;
  const env = workersEnv();
  store = {
    s3: createObjectStore(objectStoreConfigFromEnv(env)),
    bucket: env.KILN_S3_BUCKET,
    settings: artifactSettingsFromEnv(env),
    shred,
  };
  return store;
}
