import {
  artifactSettingsFromEnv,
  createObjectStore,
  engineTlog,
  LogArchiveReader,
  loadFileSigner,
  objectStoreConfigFromEnv,
  s3LogStore,
  ShredLogCipher,
  type ArtifactStore,
  type AttestorDeps,
  type ShredKeyDeps,
} from "@kiln/engine";
import type { Db } from "@kiln/db";
import type { Logger } from "@kiln/logger";
import pg from "pg";
import type { WorkersEnv } from "../env.ts";

// What the attestor and the verifier need, built once at worker start (../worker-runtime.ts); tests
// pass their own.
export interface AttestorRuntime {
  attestor: AttestorDeps;
  store: ArtifactStore;
}

export async function buildAttestorRuntime(
  env: WorkersEnv,
  db: Db,
  shred: ShredKeyDeps | null,
  log: Logger,
): Promise<AttestorRuntime> {
  if (!env.KILN_ATTESTATION_KEY_FILE)
    throw new Error("KILN_ATTESTATION_KEY_FILE is not set: the attestor has no key to sign with");
  const signer = await loadFileSigner(env.KILN_ATTESTATION_KEY_FILE);
  const pool = new pg.Pool({ connectionString: env.DATABASE_URL, max: 2 });
  pool.on("error", (err) => log.error("attestor log pool", { err }));
  const s3 = createObjectStore(objectStoreConfigFromEnv(env));
  return {
    attestor: {
      db,
      // Shredded log segments (ADR 0037) are opened with the org's data key while it lives.
      logs: {
        pool,
        archive: new LogArchiveReader(
          s3LogStore(s3, env.KILN_S3_BUCKET),
          undefined,
          shred ? new ShredLogCipher(shred) : null,
        ),
      },
      signer,
      tlog: engineTlog,
      instanceUri: env.KILN_PUBLIC_URL ?? "http://localhost:3000",
    },
    // The key store too: the verifier opens sealed artifacts to check their plaintext digest.
    store: { s3, bucket: env.KILN_S3_BUCKET, settings: artifactSettingsFromEnv(env), ...(shred ? { shred } : {}) },
  };
}
