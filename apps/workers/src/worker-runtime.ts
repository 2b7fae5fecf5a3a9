import type { Db } from "@kiln/db";
import type { ShredKeyDeps } from "@kiln/engine";
import type { Logger } from "@kiln/logger";
import type { WorkersEnv } from "./env.ts";
import { buildAttestorRuntime, type AttestorRuntime } from "./jobs/attestor-runtime.ts";
import { shredDepsFromEnv } from "./jobs/shred-runtime.ts";
import { tlogSettingsFromEnv, type TlogSettings } from "./jobs/sign-tlog-checkpoint.job.ts";

/**
 * What handlers share and must not build per job (ADR 0038): built once at worker start from the
 * workers' env and handed to every handler in its context (WorkerDeps.runtime). Tests give their own.
 */
export interface WorkerRuntime {
  /** Crypto-shredding key deps (ADR 0037); null when not configured (logs archive unencrypted). */
  shred: ShredKeyDeps | null;
  /** The attestor's and the verifier's runtime (ADR 0027). */
  attestor: () => Promise<AttestorRuntime>;
  /** The transparency log's signing settings (ADR 0026). */
  tlog: () => TlogSettings;
}

/**
 * Builds the runtime at start. A part that cannot be built yet (no attestation key file, a KEK not
 * readable) fails the jobs that need it, as before, and is tried again at their next run, so a key
 * file provided later is picked up without a restart.
 */
export function buildWorkerRuntime(env: WorkersEnv, db: Db, log: Logger): WorkerRuntime {
  const shred = shredDepsFromEnv(env, db);
  const attestor = retryingOnce(() => buildAttestorRuntime(env, db, shred, log));
  let tlog: TlogSettings | null = null;
  const rt: WorkerRuntime = {
    shred,
    attestor,
    tlog: () => (tlog ??= tlogSettingsFromEnv(env)),
  };
  // Started now; a failure here is reported by the job that needs it.
  void attestor().catch(() => undefined);
  return rt;
}

/** Memoised on success; a failed build is dropped so the next call tries again. */
function retryingOnce<T>(build: () => Promise<T>): () => Promise<T> {
  let p: Promise<T> | null = null;
  return () => {
    p ??= build().catch((e: unknown) => {
      p = null;
      throw e;
    });
    return p;
  };
}
