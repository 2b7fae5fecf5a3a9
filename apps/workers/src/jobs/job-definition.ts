import type { Db } from "@kiln/db";
import type { EngineConfig, ForgeConfig } from "@kiln/engine";
import type { Logger } from "@kiln/logger";
import type { RegistryConfig, SourcePolicy } from "@kiln/oci";
import type { Job, PgBoss } from "pg-boss";
import type { z } from "zod";
import type { WorkersEnv } from "../env.ts";
import type { WorkerRuntime } from "../worker-runtime.ts";

export interface WorkerDeps {
  db: Db;
  boss: PgBoss;
  cfg: EngineConfig;
  gitCacheDir: string;
  /** KILN_LOCAL_REPOS_ROOT: which clone URLs git may fetch from (docs/adr/0017). */
  source: SourcePolicy;
  /** The workers' logger; handlers add the ids they have (queue, job, run). */
  log: Logger;
  /** KILN_REGISTRIES: where freezing resolves image tags (ADR 0012). */
  registries: RegistryConfig;
  /** KILN_POOL_IMAGES: each pool's default base image for jobs that name none. */
  poolImages: Record<string, string>;
  /** The forge loop (ADR 0028): API URL, public URL, secrets key, GitHub App. */
  forge: ForgeConfig;
  /** Shared runtimes (shredding keys, attestor, tlog signer), built once at worker start. */
  runtime: WorkerRuntime;
}

/** One pg-boss job per file: name, payload schema, retry policy, idempotent handler (rule 9). */
export interface JobDefinition<S extends z.ZodType> {
  name: string;
  payload: S;
  retryLimit: number;
  retryDelaySeconds: number;
  /** Cap of the exponential backoff between retries (pg-boss retryDelayMax). */
  retryDelayMaxSeconds?: number;
  expireInSeconds: number;
  /** pg-boss queue policy; `stately` with a singleton key: at most one queued and one active per key. */
  policy?: "standard" | "stately";
  /** Handlers this process runs at once (I/O-bound jobs such as git fetches benefit). */
  concurrency?: number;
  handle: (deps: WorkerDeps, data: z.infer<S>, job: Job<unknown>) => Promise<void>;
  /** pg-boss cron: queued with an empty payload on this schedule (where the job ticks, the backstop). */
  schedule?: string;
  /**
   * Ticked in-process by every worker at sub-minute resolution, a pass at a time (a tick is skipped
   * while the previous pass runs); `atStart` runs one pass at once.
   */
  tick?: { everyMs: (env: WorkersEnv) => number; atStart?: boolean; failure: string };
  /** Jobs per pg-boss fetch (default 2; see the work loop in ../index.ts). */
  batchSize?: number;
  /**
   * Handles a whole fetch at once (a set-based handler: one transaction for many jobs). One entry
   * per item, in order: null when that job is done, its Error when that job (alone) failed.
   */
  handleBatch?: (deps: WorkerDeps, items: { data: z.infer<S>; job: Job<unknown> }[]) => Promise<(Error | null)[]>;
}

export function defineJob<S extends z.ZodType>(d: JobDefinition<S>): JobDefinition<S> {
  return d;
}
