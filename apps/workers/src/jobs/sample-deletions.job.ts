import { createHash } from "node:crypto";
import {
  artifactProbes,
  artifactSettingsFromEnv,
  createObjectStore,
  logProbes,
  objectStoreConfigFromEnv,
  s3LogStore,
  s3ObjectGetter,
  sampleDeletions,
  type ArtifactSettings,
  type SampleReport,
  type ShredKeyDeps,
  type SqlPool,
} from "@kiln/engine";
import pg from "pg";
import { z } from "zod";
import { workersEnv } from "../env.ts";
import { defineJob } from "./job-definition.ts";

/**
 * The deletion sampler (issue 21, docs/adr/0037): takes destroyed objects at random and tries every
 * read path on each (a direct object GET with the platform's own credentials against whatever key
 * material is left, the raw-log and stream replays); any success is recorded as a leak, audited and
 * shown on the org home. Idempotent: the round id is derived from the job id, and (round, object,
 * path) is unique, so a retried job adds no second sample (run-it-twice test beside this file).
 */
export const sampleDeletionsJob = defineJob({
  name: "sample-deletions",
  payload: z.object({ limit: z.number().int().min(1).max(500).optional() }).passthrough(),
  retryLimit: 3,
  retryDelaySeconds: 60,
  expireInSeconds: 15 * 60,
  // Destroyed objects' read paths probed every quarter hour (ADR 0037).
  schedule: "*/15 * * * *",
  handle: async ({ runtime: rt, log }, payload, job) => {
    const deps = rt.shred;
    if (!deps) return;
    const r = await runSampleDeletions(await runtime(deps), roundIdOf(job.id), payload.limit);
    if (r.leaks > 0) log.error("deletion sampler found readable deleted data", { ...r });
    else if (r.objects > 0) log.info("deletion sampler round", { ...r });
  },
});

export interface SamplerRuntime {
  keys: ShredKeyDeps;
  pool: SqlPool;
  s3: ReturnType<typeof createObjectStore>;
  bucket: string;
  artifactSettings: ArtifactSettings;
}

/** A uuid-shaped id per pg-boss job: a retry of the same job is the same round. */
export function roundIdOf(jobId: string): string {
  const h = createHash("sha256").update(`sample-deletions:${jobId}`).digest("hex");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

export function runSampleDeletions(
  rt: SamplerRuntime,
  roundId: string,
  limit?: number,
  now = new Date(),
): Promise<SampleReport> {
  const probes = [
    ...logProbes({
      keys: rt.keys,
      pool: rt.pool,
      store: s3LogStore(rt.s3, rt.bucket),
      getObject: s3ObjectGetter(rt.s3, rt.bucket),
      clock: () => now,
    }),
    // The API download of an artifact, opened with the key store as the web app opens it.
    ...artifactProbes({
      db: rt.keys.db,
      store: { s3: rt.s3, bucket: rt.bucket, settings: rt.artifactSettings, shred: rt.keys },
    }),
  ];
  return sampleDeletions({ db: rt.keys.db, probes }, { roundId, now, limit });
}

let built: SamplerRuntime | null = null;

async function runtime(keys: ShredKeyDeps): Promise<SamplerRuntime> {
  if (built) return built;
  const env = workersEnv();
  const pool = new pg.Pool({ connectionString: env.DATABASE_URL, max: 2 });
  built = {
    keys,
    pool,
    s3: createObjectStore(objectStoreConfigFromEnv(env)),
    bucket: env.KILN_S3_BUCKET,
    artifactSettings: artifactSettingsFromEnv(env),
  };
  return built;
}
