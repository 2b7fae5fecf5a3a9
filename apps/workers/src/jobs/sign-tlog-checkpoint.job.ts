import path from "node:path";
import type { Db } from "@kiln/db";
import { loadKeyEncryptionKey, logSigner, signCheckpoint, tlogOrigin } from "@kiln/engine";
import { z } from "zod";
import type { WorkersEnv } from "../env.ts";
import { defineJob } from "./job-definition.ts";

export interface TlogSettings {
  origin: string;
  /** Seals the log's Ed25519 key in the database (docs/adr/0026). */
  kek: Uint8Array;
  /**
   * The last head this signer signed, beside the KEK and outside the tables it signs (issue 28):
   * a tree that does not extend it is refused, however the tables were changed.
   */
  headFile: string;
}

/**
 * Issue 17: signs a C2SP checkpoint of the transparency log whenever it has grown (the empty tree's
 * first, which also creates the log key). Ticked in-process every KILN_TLOG_CHECKPOINT_MS (1 s) so a
 * new entry is in a checkpoint within the 5 s, with a cron backstop. Idempotent: the engine
 * signs under an advisory lock and only a size above the latest, so a second run, or every worker
 * at once, signs nothing more (run-it-twice test beside this file).
 */
export const signTlogCheckpointJob = defineJob({
  name: "sign-tlog-checkpoint",
  payload: z.object({}).passthrough(),
  retryLimit: 2,
  retryDelaySeconds: 1,
  expireInSeconds: 60,
  // A new entry is signed into a checkpoint within a second or so (issue 17: 5 s); the cron is the backstop.
  schedule: "* * * * *",
  tick: { everyMs: (env) => env.KILN_TLOG_CHECKPOINT_MS, failure: "tlog checkpoint failed" },
  handle: async ({ db, runtime, log }) => {
    const r = await runCheckpointSigning(db, runtime.tlog());
    if (r.created) log.info("tlog checkpoint signed", { size: r.size });
  },
});

/** One pass; the handler's whole body, exported so the run-it-twice test drives exactly it. */
export async function runCheckpointSigning(db: Db, s: TlogSettings): Promise<{ created: boolean; size: number }> {
  return signCheckpoint(db, await logSigner(db, s), { headFile: s.headFile });
}

/** Read once per worker (../worker-runtime.ts); creates the KEK file on first start. */
export function tlogSettingsFromEnv(env: WorkersEnv): TlogSettings {
  return {
    origin: tlogOrigin({ origin: env.KILN_TLOG_ORIGIN, publicUrl: env.KILN_PUBLIC_URL }),
    kek: loadKeyEncryptionKey({
      base64: env.KILN_TLOG_KEY_ENCRYPTION_KEY,
      file: path.resolve(env.KILN_DATA_DIR, "keys/tlog-kek"),
    }),
    headFile: path.resolve(env.KILN_DATA_DIR, "keys/tlog-signed-head.json"),
  };
}
