// Artifacts under crypto-shredding (issue 21, docs/adr/0037 "Artifacts"): the control plane makes
// (or finds) the org's artifact data key of the day for the run's class and hands it, with the
// object's salt, to the host agent of the attempt — never to the sandbox. The agent seals each part
// as it PUTs it; the consuming agent and the API's download open the object again.
import { randomBytes } from "node:crypto";
import type { Db } from "@kiln/db";
import { DEFAULT_RETENTION_WINDOWS, DomainError, SHRED_DEFAULT_CHUNK_BYTES, SHRED_SALT_BYTES } from "@kiln/domain";
import type { ArtifactStore } from "./artifact-context.ts";
import { readBack } from "./store-ops.ts";
import { dataKeyForRead, dataKeyForWrite, runShredScope, type WriteKey } from "../shredding/index.ts";

/** What the agent needs to seal or open one object; the key is secret and lives only in memory. */
export interface ArtifactSealInfo {
  keyId: string;
  key: Buffer;
  salt: Buffer;
  chunkSize: number;
  storedSizeBytes: number;
  dueAt: Date;
}

/** The data key new uploads of this run are sealed under at `at`, or null when shredding is off. */
export async function artifactWriteKey(
  db: Db,
  store: ArtifactStore,
  s: { runId: string; orgId: string; at: Date },
): Promise<WriteKey | null> {
  if (!store.shred) return null;
  const scope = await runShredScope(db, s.runId, "artifact", store.settings.retention ?? DEFAULT_RETENTION_WINDOWS);
  if (scope.orgId !== s.orgId) throw new Error(`run ${s.runId} is not org ${s.orgId}'s`);
  return dataKeyForWrite(store.shred, {
    orgId: s.orgId,
    kind: "artifact",
    cls: scope.cls,
    windowDays: scope.windowDays,
    at: s.at,
  });
}

/** The key a sealed object of `orgId` opens with; SHRED.KEY_DESTROYED (410) from its due instant on. */
export async function artifactReadKey(store: ArtifactStore, orgId: string, keyId: string): Promise<WriteKey> {
  if (!store.shred)
    throw new DomainError(
      "SHRED.KEY_UNAVAILABLE",
      "this artifact is sealed and this process has no shred key store (KILN_SHRED_KEY_DIR, KILN_SECRETS_KEK_FILE)",
    );
  return dataKeyForRead(store.shred, orgId, keyId, new Date());
}

export function newArtifactSalt(): Buffer {
  return randomBytes(SHRED_SALT_BYTES);
}

export const ARTIFACT_CHUNK_BYTES = SHRED_DEFAULT_CHUNK_BYTES;

/** The columns of a sealed generation, as the engine reads them. */
export interface SealColumns {
  shred_key_id: string | null;
  shred_salt: Uint8Array | null;
  shred_chunk_size: number | null;
  stored_size_bytes: bigint | null;
}

/** The seal info of a generation's row with its key, or null for a plaintext generation. */
export async function sealInfoFor(
  store: ArtifactStore,
  orgId: string,
  g: SealColumns,
  known?: WriteKey | null,
): Promise<ArtifactSealInfo | null> {
  if (!g.shred_key_id || !g.shred_salt || !g.shred_chunk_size || g.stored_size_bytes === null) return null;
  const key = known && known.id === g.shred_key_id ? known : await artifactReadKey(store, orgId, g.shred_key_id);
  return {
    keyId: key.id,
    key: key.key,
    salt: Buffer.from(g.shred_salt),
    chunkSize: g.shred_chunk_size,
    storedSizeBytes: Number(g.stored_size_bytes),
    dueAt: key.dueAt,
  };
}

/** The agent protocol's `seal` object (agentProtocol.artifactSeal). */
export function sealWire(s: ArtifactSealInfo): {
  scheme: "kiln-shred-v1";
  key_id: string;
  key: string;
  salt: string;
  chunk_size: number;
  stored_size_bytes: number;
} {
  return {
    scheme: "kiln-shred-v1",
    key_id: s.keyId,
    key: s.key.toString("base64"),
    salt: s.salt.toString("base64"),
    chunk_size: s.chunkSize,
    stored_size_bytes: s.storedSizeBytes,
  };
}

/**
 * The plaintext size and SHA-256 of what the store holds for a generation: a sealed object is
 * opened under its key (every chunk authenticated), a plaintext one hashed as stored. Throws
 * SHRED.KEY_DESTROYED once the key is gone and SHRED.KEY_UNAVAILABLE without a key store.
 */
export async function readBackPlaintext(
  store: ArtifactStore,
  orgId: string,
  objectKey: string,
  keyId: string | null,
): Promise<{ sizeBytes: number; sha256: string }> {
  if (!keyId) return readBack(store, objectKey);
  const key = await artifactReadKey(store, orgId, keyId);
  try {
    return await readBack(store, objectKey, key);
  } finally {
    key.key.fill(0);
  }
}
