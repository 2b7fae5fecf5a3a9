// What the crypto-shredding jobs and the log archiver share (docs/adr/0037): the key deps, built
// from the workers' env at worker start (../worker-runtime.ts), or null when shredding is not
// configured (no key dir or no secrets KEK: logs then archive unencrypted, as before issue 21).
import { kekSourceFromEnv, PlatformKeyStore, type ShredKeyDeps } from "@kiln/engine";
import type { Db } from "@kiln/db";
import type { WorkersEnv } from "../env.ts";

export function shredDepsFromEnv(env: WorkersEnv, db: Db): ShredKeyDeps | null {
  return env.KILN_SHRED_KEY_DIR && env.KILN_SECRETS_KEK_FILE
    ? {
        db,
        keks: kekSourceFromEnv(env),
        platformKeys: new PlatformKeyStore(env.KILN_SHRED_KEY_DIR),
      }
    : null;
}
