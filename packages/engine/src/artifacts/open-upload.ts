import { randomUUID } from "node:crypto";
import { withTx, type Db, type Tx } from "@kiln/db";
import {
  artifactObjectKey,
  chunkAlignedPartSize,
  sealedParts,
  sealedSize,
  decideArtifactOpen,
  listArtifactParts,
  planArtifactParts,
  type ArtifactFormat,
  type ArtifactState,
} from "@kiln/domain";
import type { ArtifactStore } from "./artifact-context.ts";
import { lockCurrentAttempt, type JobClaims } from "../attempts/index.ts";
import { recordArtifactTransition } from "./artifact-journal.ts";
import { abortMultipartUpload, createMultipartUpload, presignPart } from "./store-ops.ts";
import {
  ARTIFACT_CHUNK_BYTES,
  artifactWriteKey,
  newArtifactSalt,
  sealInfoFor,
  type ArtifactSealInfo,
  type SealColumns,
} from "./artifact-seal.ts";

export interface OpenUploadRequest {
  name: string;
  sizeBytes: number;
  sha256: string;
  format: ArtifactFormat;
  /** The agent seals parts as it uploads them (protocol 3); honoured when shredding is configured. */
  seal?: boolean;
}

export interface UploadSession {
  generationId: string;
  state: "uploading" | "sealed";
  sizeBytes: number;
  sha256: string;
  partSize: number;
  partCount: number;
  parts: { partNumber: number; offset: number; size: number; sealedSize?: number; done: boolean; url?: string }[];
  urlsExpireAt: string | null;
  /** For the agent only: the key and salt the parts are sealed with (ADR 0037). */
  seal: ArtifactSealInfo | null;
}

interface GenerationRow extends SealColumns {
  org_id: string;
  id: string;
  state: ArtifactState;
  size_bytes: bigint;
  sha256: string;
  format: ArtifactFormat;
  object_key: string;
  upload_id: string | null;
  part_size: bigint;
  part_count: number;
}

/**
 * Opens (or resumes) the upload session for one artifact of the caller's current attempt: a fresh
 * generation with a fresh object key and a multipart upload, and presigned URLs for every part not
 * yet recorded. Re-opening with the same bytes resumes; it is also how the agent gets fresh URLs.
 */
export async function openUpload(
  db: Db,
  store: ArtifactStore,
  claims: JobClaims,
  req: OpenUploadRequest,
): Promise<UploadSession> {
  // The data key is made (or found) before the transaction: dataKeyForWrite commits its own row, and
  // the generation's day (created_at) is the key's day, so its expiry and the key's due agree.
  const at = new Date();
  const owner =
    req.seal && store.shred
      ? (
          await db.$queryRaw<{ run_id: string; org_id: string }[]>`
            SELECT run_id::text, org_id::text FROM job_run WHERE id = ${claims.jobId}::uuid`
        )[0]
      : undefined;
  const writeKey = owner ? await artifactWriteKey(db, store, { runId: owner.run_id, orgId: owner.org_id, at }) : null;
  const generationId = await withTx(db, "artifact-open-upload", async (tx) => {
    const { attempt, job } = await lockCurrentAttempt(tx, claims);
    const existing = await findGeneration(tx, claims.attemptId, req.name);
    const decision = decideArtifactOpen(
      job.artifacts.publish.map((p) => p.name),
      req,
      existing && {
        id: existing.id,
        state: existing.state,
        sizeBytes: Number(existing.size_bytes),
        sha256: existing.sha256,
        format: existing.format,
      },
    );
    if (decision.kind !== "create") return decision.generationId;
    const plain = planArtifactParts(req.sizeBytes, store.settings.partSizeBytes);
    // A sealed upload's parts hold whole chunks (domain sealedParts), so each is sealed on its own.
    const plan = writeKey
      ? planArtifactParts(req.sizeBytes, chunkAlignedPartSize(plain.partSize, ARTIFACT_CHUNK_BYTES))
      : plain;
    const id = randomUUID();
    const key = artifactObjectKey({
      orgId: attempt.orgId,
      runId: attempt.runId,
      jobId: attempt.jobId,
      epoch: attempt.epoch,
      generationId: id,
      name: req.name,
    });
    const seal = writeKey
      ? {
          keyId: writeKey.id,
          salt: newArtifactSalt(),
          chunk: ARTIFACT_CHUNK_BYTES,
          stored: sealedSize(req.sizeBytes, ARTIFACT_CHUNK_BYTES),
          due: writeKey.dueAt,
        }
      : null;
    await tx.$executeRaw`
      INSERT INTO artifact_generation (id, attempt_id, job_id, run_id, org_id, epoch, name, object_key, size_bytes, sha256, format, state, part_size, part_count,
                                       created_at, shred_key_id, shred_salt, shred_chunk_size, stored_size_bytes, shred_due_at)
      VALUES (${id}::uuid, ${attempt.id}::uuid, ${attempt.jobId}::uuid, ${attempt.runId}::uuid, ${attempt.orgId}::uuid, ${attempt.epoch}, ${req.name}, ${key},
              ${req.sizeBytes}::bigint, ${req.sha256}, ${req.format}, 'uploading', ${plan.partSize}::bigint, ${plan.partCount},
              ${at}, ${seal?.keyId ?? null}::uuid, ${seal?.salt ?? null}, ${seal?.chunk ?? null}::int, ${seal?.stored ?? null}::bigint, ${seal?.due ?? null})`;
    await recordArtifactTransition(tx, {
      orgId: attempt.orgId,
      runId: attempt.runId,
      jobId: attempt.jobId,
      attemptId: attempt.id,
      from: null,
      to: "uploading",
      reason: "upload_opened",
      data: {
        generation_id: id,
        name: req.name,
        epoch: attempt.epoch,
        size_bytes: req.sizeBytes,
        part_count: plan.partCount,
        ...(seal ? { sealed: { key_id: seal.keyId, stored_size_bytes: seal.stored } } : {}),
      },
    });
    return id;
  });
  let g = await loadGeneration(db, generationId);
  if (g.state === "uploading" && g.upload_id === null) g = await attachMultipartUpload(db, store, g);
  try {
    return await describeSession(db, store, g, writeKey);
  } finally {
    // The session holds its own copy for the response; this one is done with.
    if (writeKey && writeKey.id !== g.shred_key_id) writeKey.key.fill(0);
  }
}

/**
 * The multipart upload is created outside the transaction (no side effects inside one) and then
 * recorded with a guarded update. Two racing openers both create one; the loser aborts its own.
 * A crash in between leaves an upload under this generation's key that the collector finds by
 * listing that key (or the bucket's lifecycle rule reaps it).
 */
async function attachMultipartUpload(db: Db, store: ArtifactStore, g: GenerationRow): Promise<GenerationRow> {
  const uploadId = await createMultipartUpload(store, g.object_key);
  const won = await db.$executeRaw`
    UPDATE artifact_generation SET upload_id = ${uploadId} WHERE id = ${g.id}::uuid AND upload_id IS NULL AND state = 'uploading'`;
  if (won !== 1) await abortMultipartUpload(store, g.object_key, uploadId);
  return loadGeneration(db, g.id);
}

async function describeSession(
  db: Db,
  store: ArtifactStore,
  g: GenerationRow,
  writeKey: Awaited<ReturnType<typeof artifactWriteKey>>,
): Promise<UploadSession> {
  const seal = g.state === "uploading" ? await sealInfoFor(store, g.org_id, g, writeKey) : null;
  const sizeBytes = Number(g.size_bytes);
  const plan = { partSize: Number(g.part_size), partCount: g.part_count };
  const done = new Set(
    (
      await db.$queryRaw<
        { part_number: number }[]
      >`SELECT part_number FROM artifact_part WHERE generation_id = ${g.id}::uuid`
    ).map((p) => p.part_number),
  );
  const sealed = g.state === "sealed";
  const sealedSizes = seal ? sealedParts(sizeBytes, plan, seal.chunkSize).map((p) => p.sealedSize) : null;
  const parts = await Promise.all(
    listArtifactParts(sizeBytes, plan).map(async (p) => {
      const isDone = sealed || done.has(p.partNumber);
      const url =
        !isDone && g.state === "uploading" && g.upload_id
          ? await presignPart(store, g.object_key, g.upload_id, p.partNumber)
          : undefined;
      const sealedSize = sealedSizes?.[p.partNumber - 1];
      return {
        partNumber: p.partNumber,
        offset: p.offset,
        size: p.size,
        ...(sealedSize !== undefined ? { sealedSize } : {}),
        done: isDone,
        ...(url ? { url } : {}),
      };
    }),
  );
  const anyUrl = parts.some((p) => p.url);
  return {
    generationId: g.id,
    state: sealed ? "sealed" : "uploading",
    sizeBytes,
    sha256: g.sha256,
    partSize: plan.partSize,
    partCount: plan.partCount,
    parts,
    // Signed now, valid for the TTL; a few seconds early so the agent refreshes before a 403.
    urlsExpireAt: anyUrl ? new Date(Date.now() + store.settings.uploadUrlTtlSec * 1000 - 5_000).toISOString() : null,
    seal,
  };
}

async function findGeneration(tx: Tx, attemptId: string, name: string): Promise<GenerationRow | null> {
  const rows = await tx.$queryRaw<GenerationRow[]>`
    SELECT id, org_id::text, state, size_bytes, sha256, format, object_key, upload_id, part_size, part_count,
           shred_key_id::text, shred_salt, shred_chunk_size, stored_size_bytes
    FROM artifact_generation WHERE attempt_id = ${attemptId}::uuid AND name = ${name} FOR UPDATE`;
  return rows[0] ?? null;
}

async function loadGeneration(db: Db, id: string): Promise<GenerationRow> {
  const rows = await db.$queryRaw<GenerationRow[]>`
    SELECT id, org_id::text, state, size_bytes, sha256, format, object_key, upload_id, part_size, part_count,
           shred_key_id::text, shred_salt, shred_chunk_size, stored_size_bytes FROM artifact_generation WHERE id = ${id}::uuid`;
  const g = rows[0];
  if (!g) throw new Error(`artifact generation ${id} vanished`);
  return g;
}
