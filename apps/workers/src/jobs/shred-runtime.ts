// What the crypto-shredding jobs and the log archiver share (docs/adr/0037): the key deps, built
// from the workers' env on first use, or null when shredding is not configured (no key dir or no
// secrets KEK: logs then archive unencrypted, as before issue 21).
import { kekSourceFromEnv, PlatformKeyStore, type ShredKeyDeps } from "@kiln/engine";
import type { Db } from "@kiln/db";
import { workersEnv } from "../env.ts";

let cached: { db: Db; deps: ShredKeyDeps | null } | null = null;

export function shredDepsFromEnv(db: Db): ShredKeyDeps | null {
  if (cached?.db === db) return cached.deps;
  const env = workersEnv();
  const deps =
    env.KILN_SHRED_KEY_DIR && env.KILN_SECRETS_KEK_FILE
      ? {
          db,
          keks: kekSourceFromEnv(env),
          platformKeys: new PlatformKeyStore(env.KILN_SHRED_KEY_DIR),
        }
      : null;
  cached = { db, deps };
  return deps;
}
