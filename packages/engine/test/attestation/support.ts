// Attestation test support: a real key file, the real transparency log in the test database, a
// checkpoint signer, and the artifacts' s3rver for both artifacts and logs.
import { generateKeyPairSync, randomBytes } from "node:crypto";
import { chmod, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type { Db } from "@kiln/db";
import { afterAll, beforeAll } from "vitest";
import type { AttestorDeps } from "../../src/attestation/attest-job.ts";
import { loadFileSigner, type AttestationSigner } from "../../src/attestation/signer.ts";
import { engineTlog } from "../../src/attestation/tlog-adapter.ts";
import { signCheckpoint } from "../../src/attestation/tlog/tlog-checkpoint.ts";
import { logSigner } from "../../src/attestation/tlog/tlog-key.ts";
import { LogArchiveReader, s3LogStore } from "../../src/logs/index.ts";
import type { ArtifactStore } from "../../src/artifacts/index.ts";
import type pg from "pg";

export const LOG_ORIGIN = "kiln.test/attestations";
const KEK = randomBytes(32);
// The signer's head file (issue 28) lives outside the database, one per test file's log.
const HEAD_FILE = path.join(os.tmpdir(), `kiln-tlog-head-${randomBytes(8).toString("hex")}.json`);

export function useSigner(): () => AttestationSigner {
  let dir = "";
  let signer: AttestationSigner | null = null;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), "kiln-attestor-"));
    const file = path.join(dir, "attestation-key.pem");
    const { privateKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
    await writeFile(file, privateKey.export({ type: "pkcs8", format: "pem" }), { mode: 0o600 });
    await chmod(file, 0o600);
    signer = await loadFileSigner(file);
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });
  return () => {
    if (!signer) throw new Error("signer not ready");
    return signer;
  };
}

export function attestorDeps(db: Db, pool: pg.Pool, store: ArtifactStore, signer: AttestationSigner): AttestorDeps {
  return {
    db,
    logs: { pool, archive: new LogArchiveReader(s3LogStore(store.s3, store.bucket)) },
    signer,
    tlog: engineTlog,
    instanceUri: "https://kiln.test",
  };
}

/** What the workers' checkpoint ticker does: sign the grown log. */
export async function checkpoint(db: Db): Promise<void> {
  await signCheckpoint(db, await logSigner(db, { origin: LOG_ORIGIN, kek: KEK }), { headFile: HEAD_FILE });
}
