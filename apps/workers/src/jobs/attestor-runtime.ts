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
} from "@kiln/engine";
import type { Db } from "@kiln/db";
import type { Logger } from "@kiln/logger";
import pg from "pg";
import { workersEnv } from "../env.ts";
import { shredDepsFromEnv } from "./shred-runtime.ts";

// What the attestor and the verifier need, built on first use from the workers' env (tests import
// the job modules with no environment and pass their own runtime).
export interface AttestorRuntime {
  attestor: AttestorDeps;
  store: ArtifactStore;
}

let runtime: Promise<AttestorRuntime> | null = null;

export function attestorRuntimeFromEnv(db: Db, log: Logger): Promise<AttestorRuntime> {
  runtime ??= build(db, log).catch((e: unknown) => {
    runtime = null; // a key file fixed later is picked up by the next job
    throw e;
  });
  return runtime;
}

async function build(db: Db, log: Logger): Promise<AttestorRuntime> {
  const env = workersEnv();
  if (!env.KILN_ATTESTATION_KEY_FILE)
    throw new Error("KILN_ATTESTATION_KEY_FILE is not set: the attestor has no key to sign with");
  const signer = await loadFileSigner(env.KILN_ATTESTATION_KEY_FILE);
  const pool = new pg.Pool({ connectionString: env.DATABASE_URL, max: 2 });
  pool.on("error", (err) => log.error("attestor log pool", { err }));
  const s3 = createObjectStore(objectStoreConfigFromEnv(env));
  const shred = shredDepsFromEnv(db);
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
