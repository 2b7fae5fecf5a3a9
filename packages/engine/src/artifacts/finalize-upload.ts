import { createHash } from "node:crypto";
import { sqlPool, withTx, type Db, type DbOrTx } from "@kiln/db";
import {
  decideArtifactSeal,
  decideStoreDigestCheck,
  DEFAULT_RETENTION_WINDOWS,
  DomainError,
  type ArtifactState,
} from "@kiln/domain";
import type { ArtifactStore } from "./artifact-context.ts";
import { lockCurrentAttempt, type JobClaims } from "../attempts/index.ts";
import { recordArtifactTransition } from "./artifact-journal.ts";
import { completeMultipartUpload, headObject, readBack } from "./store-ops.ts";
import { loadRunRetention, prismaRows, stampFor } from "../shared/retention-stamp.ts";
import { artifactReadKey } from "./artifact-seal.ts";

export interface SealedArtifact {
  generationId: string;
  sizeBytes: number;
  sha256: string;
}

interface Row {
  id: string;
  org_id: string;
  run_id: string;
  job_id: string;
  attempt_id: string;
  epoch: number;
  name: string;
  state: ArtifactState;
  object_key: string;
  upload_id: string | null;
  size_bytes: bigint;
  sha256: string;
  part_count: number;
  store_completed_at: Date | null;
  created_at: Date;
  shred_key_id: string | null;
  stored_size_bytes: bigint | null;
  shred_due_at: Date | null;
}

/**
 * The idempotent finaliser for one upload session (seed 000 section 12): complete the multipart
 * upload from the persisted part list, verify the stored bytes (the store's multipart ETag against
 * the agent's part MD5s, else a full read-back and SHA-256), and seal the generation
 * for this attempt only if the attempt is still current at that moment. Calling it again after a
 * lost response repairs exactly this session: a sealed generation is returned as it is, an upload
 * the store already completed is verified and sealed once. A fenced attempt is refused before any
 * store work and again at the seal; its generation stays unbound and is collected later.
 */
export async function finalizeUpload(
  db: Db,
  store: ArtifactStore,
  claims: JobClaims,
  generationId: string,
): Promise<SealedArtifact> {
  // Finalisers of one session run one at a time. Two at once (an agent asking again while its
  // first request still runs) both completed the multipart upload, and S3-compatible stores that
  // write the object non-atomically let one read back a half-written object: a false mismatch
  // that abandoned good bytes. The lock is a session advisory lock on its own connection, held
  // across the store work with no transaction open; a waiter then finds the session sealed.
  const client = await sqlPool(db).connect();
  let broken = false;
  const onError = () => {
    broken = true;
  };
  client.on("error", onError);
  try {
    await client.query("SELECT pg_advisory_lock(hashtextextended($1, 7))", [generationId]);
    try {
      return await finalizeLocked(db, store, claims, generationId);
    } finally {
      await client.query("SELECT pg_advisory_unlock(hashtextextended($1, 7))", [generationId]).catch(() => {
        broken = true; // a dead session released its locks with it
      });
    }
  } finally {
    client.off("error", onError);
    client.release(broken);
  }
}

async function finalizeLocked(
  db: Db,
  store: ArtifactStore,
  claims: JobClaims,
  generationId: string,
): Promise<SealedArtifact> {
  const g = await withTx(db, "artifact-finalize-check", async (tx) => {
    await lockCurrentAttempt(tx, claims);
    return loadOwnGeneration(tx, claims, generationId);
  });
  if (g.state === "sealed") return sealedView(g);
  if (g.state !== "uploading" || !g.upload_id)
    throw new DomainError("ARTIFACT.UPLOAD_NOT_FOUND", `the upload session is ${g.state}`);

  const parts = await db.$queryRaw<{ part_number: number; etag: string; md5: string | null }[]>`
    SELECT part_number, etag, md5 FROM artifact_part WHERE generation_id = ${g.id}::uuid ORDER BY part_number`;
  const expected = { sizeBytes: Number(g.size_bytes), sha256: g.sha256 };
  if (!g.store_completed_at) {
    const have = new Set(parts.map((p) => p.part_number));
    const missing = Array.from({ length: g.part_count }, (_, i) => i + 1).filter((n) => !have.has(n));
    if (missing.length > 0) {
      throw new DomainError(
        "ARTIFACT.PARTS_INCOMPLETE",
        `parts not recorded yet: ${missing.slice(0, 20).join(", ")}${missing.length > 20 ? ", ..." : ""}`,
      );
    }
    const done = await completeMultipartUpload(
      store,
      g.object_key,
      g.upload_id,
      parts.map((p) => ({ partNumber: p.part_number, etag: p.etag })),
    );
    if (done === "invalid_part") {
      // The store refused the recorded ETags: it holds other bytes for some part than were reported.
      await abandonOwn(db, g, "verification_failed", { store_error: "InvalidPart" });
      throw new DomainError(
        "ARTIFACT.VERIFICATION_FAILED",
        "the object store holds different bytes for a part than the agent recorded",
      );
    }
    await db.$executeRaw`UPDATE artifact_generation SET store_completed_at = now() WHERE id = ${g.id}::uuid AND store_completed_at IS NULL`;
  }

  // The store's own part digests first (one HEAD); reading the whole object back only when they
  // cannot vouch for it (docs/adr/0007-artifacts.md, "Verification by the store's part digests").
  // A sealed object (ADR 0037): the store holds the sealed bytes, so its size and part digests are
  // the sealed parts'; a read-back opens it under its key and compares the plaintext's digest.
  const storedSize = g.stored_size_bytes === null ? expected.sizeBytes : Number(g.stored_size_bytes);
  const head = await headObject(store, g.object_key);
  const byDigests =
    head && parts.length === g.part_count
      ? decideStoreDigestCheck({ sizeBytes: storedSize, partMd5s: parts.map((p) => p.md5) }, head, (b) =>
          createHash("md5").update(b).digest("hex"),
        )
      : "read_back";
  let verifiedBy: "store_part_md5s" | "read_back" = "store_part_md5s";
  if (byDigests === "read_back") {
    verifiedBy = "read_back";
    const key = g.shred_key_id ? await artifactReadKey(store, g.org_id, g.shred_key_id) : undefined;
    let observed: { sizeBytes: number; sha256: string };
    try {
      observed = await readBack(store, g.object_key, key);
    } finally {
      key?.key.fill(0);
    }
    if (decideArtifactSeal(expected, observed) === "mismatch") {
      await abandonOwn(db, g, "verification_failed", {
        observed_size: observed.sizeBytes,
        observed_sha256: observed.sha256,
      });
      throw new DomainError(
        "ARTIFACT.VERIFICATION_FAILED",
        `stored object is ${observed.sizeBytes} bytes with sha256 ${observed.sha256 || "-"}; expected ${expected.sizeBytes} bytes with sha256 ${expected.sha256}`,
      );
    }
  }

  return withTx(db, "artifact-seal", async (tx) => {
    // The linearisation point: the attempt must still be current now, not only when it started.
    const { attempt } = await lockCurrentAttempt(tx, claims);
    // Retention by provenance (docs/adr/0036): class and expiry are facts of the seal, written with
    // it. The day is the upload session's (its creation), the day the bytes' data key belongs to.
    const stamp = stampFor(
      await loadRunRetention(prismaRows(tx), g.run_id),
      "artifact",
      g.created_at,
      store.settings.retention ?? DEFAULT_RETENTION_WINDOWS,
    );
    const n = await tx.$executeRaw`
      UPDATE artifact_generation SET state = 'sealed', sealed_at = now(),
        retention_class = ${stamp.cls}, expires_at = ${stamp.expiresAt}
      WHERE id = ${g.id}::uuid AND attempt_id = ${attempt.id}::uuid AND state = 'uploading'`;
    if (n === 1) {
      await recordArtifactTransition(tx, {
        orgId: g.org_id,
        runId: g.run_id,
        jobId: g.job_id,
        attemptId: g.attempt_id,
        from: "uploading",
        to: "sealed",
        reason: "verified",
        data: {
          generation_id: g.id,
          name: g.name,
          epoch: g.epoch,
          size_bytes: expected.sizeBytes,
          sha256: expected.sha256,
          verified_by: verifiedBy,
          ...(g.shred_key_id ? { sealed_under: g.shred_key_id } : {}),
          retention_class: stamp.cls,
          expires_at: stamp.expiresAt.toISOString(),
        },
      });
      // Every sealed object is recorded for the deletion sampler (ADR 0037): it probes the object's
      // read paths once the key named here is destroyed.
      if (g.shred_key_id && g.shred_due_at)
        await tx.$executeRaw`
          INSERT INTO shred_object (object_key, org_id, key_id, kind, subject_id, due_at)
          VALUES (${g.object_key}, ${g.org_id}::uuid, ${g.shred_key_id}::uuid, 'artifact', ${g.id}::uuid, ${g.shred_due_at})
          ON CONFLICT (object_key) DO NOTHING`;
      return sealedView(g);
    }
    // A concurrent finaliser of the same session sealed it first: same answer.
    const now = await loadOwnGeneration(tx, claims, g.id);
    if (now.state === "sealed") return sealedView(now);
    throw new DomainError("ARTIFACT.SESSION_CONFLICT", `the upload session is ${now.state}`);
  });
}

function sealedView(g: Row): SealedArtifact {
  return { generationId: g.id, sizeBytes: Number(g.size_bytes), sha256: g.sha256 };
}

async function loadOwnGeneration(db: DbOrTx, claims: JobClaims, id: string): Promise<Row> {
  const rows = await db.$queryRaw<Row[]>`
    SELECT id, org_id, run_id, job_id, attempt_id, epoch, name, state, object_key, upload_id, size_bytes, sha256, part_count, store_completed_at, created_at,
           shred_key_id::text, stored_size_bytes, shred_due_at
    FROM artifact_generation WHERE id = ${id}::uuid AND attempt_id = ${claims.attemptId}::uuid`;
  const g = rows[0];
  if (!g) throw new DomainError("ARTIFACT.UPLOAD_NOT_FOUND", "no such upload session for this attempt");
  return g;
}

/** Bytes that fail verification are never sealed; the collector deletes the object. */
async function abandonOwn(db: Db, g: Row, reason: string, data: Record<string, unknown>): Promise<void> {
  await withTx(db, "artifact-abandon", async (tx) => {
    const n = await tx.$executeRaw`
      UPDATE artifact_generation SET state = 'abandoned', abandoned_at = now(), abandon_reason = ${reason}
      WHERE id = ${g.id}::uuid AND state = 'uploading'`;
    if (n === 1) {
      await recordArtifactTransition(tx, {
        orgId: g.org_id,
        runId: g.run_id,
        jobId: g.job_id,
        attemptId: g.attempt_id,
        from: "uploading",
        to: "abandoned",
        reason,
        data: { generation_id: g.id, ...data },
      });
    }
  });
}
