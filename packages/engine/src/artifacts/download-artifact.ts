import type { Db } from "@kiln/db";
import { quarantined } from "./artifact-errors.ts";
import { DomainError } from "@kiln/domain";
import type { ArtifactStore } from "./artifact-context.ts";
import { openSealedObject, presignDownload } from "./store-ops.ts";
import { sealInfoFor, type SealColumns } from "./artifact-seal.ts";
import type { Readable } from "node:stream";

/** Who asks: an API token's org, or a signed-in user (a member of the artifact's org). */
export type ArtifactReader = { orgId: string } | { userId: string };

/**
 * A plaintext artifact is a presigned URL (the bytes bypass the control plane). A sealed one (ADR
 * 0037) cannot be handed out that way without handing out its data key, which opens every artifact
 * of the org's day and class and would outlive the deletion it must prove: it is opened by the
 * serving process and streamed (`body`), every chunk authenticated before it is sent.
 */
export type ArtifactDownload =
  | { kind: "redirect"; url: string; expiresInSec: number; name: string }
  | { kind: "stream"; name: string; sizeBytes: number; sha256: string; body: Readable };

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * GET /v1/artifacts/{artifact_id}/download, for API tokens and the dashboard alike (issue 19). The
 * id is the artifact's binding (one per job and name). Authorised on every request, in the query
 * itself: the binding's job must belong to the token's org, or the user must be a member of the
 * job's org now; anything else is the same ARTIFACT.NOT_FOUND as an id that never existed. The
 * answer is a presigned GET valid for the store's short TTL, so the bytes bypass the control plane
 * and a leaked URL dies within minutes.
 *
 * Bytes that retention has deleted answer ARTIFACT.EXPIRED (410) instead of a URL that would 404 at
 * the store. Kiln has no quarantine state for artifacts (docs/adr/0029), so there is no code for it.
 */
export async function downloadArtifact(
  db: Db,
  store: ArtifactStore,
  input: { artifactId: string; reader: ArtifactReader },
): Promise<ArtifactDownload> {
  if (!UUID.test(input.artifactId)) throw new DomainError("ARTIFACT.NOT_FOUND", "artifact not found");
  const orgId = "orgId" in input.reader ? input.reader.orgId : null;
  const userId = "userId" in input.reader ? input.reader.userId : null;
  // The artifact's id is its sealed generation's (the bytes its attestation's subject names, so
  // download and attestation agree on one id); visible through a binding of a job of the caller's org.
  const rows = await db.$queryRaw<
    ({
      name: string;
      object_key: string;
      state: string;
      object_deleted_at: Date | null;
      expired_at: Date | null;
      quarantine: string | null;
      org_id: string;
      size_bytes: bigint;
      sha256: string;
    } & SealColumns)[]
  >`
    SELECT b.name, g.object_key, g.state, g.object_deleted_at, g.expired_at, j.org_id::text, g.size_bytes, g.sha256,
           g.shred_key_id::text, g.shred_salt, g.shred_chunk_size, g.stored_size_bytes,
           (SELECT q.reason FROM artifact_quarantine q WHERE q.generation_id = g.id) AS quarantine
    FROM artifact_generation g
    JOIN artifact_binding b ON b.generation_id = g.id
    JOIN job_run j ON j.id = b.job_id
    WHERE g.id = ${input.artifactId}::uuid
      AND (j.org_id = ${orgId}::uuid
           OR EXISTS (SELECT 1 FROM membership m WHERE m.org_id = j.org_id AND m.user_id = ${userId}::uuid))
    LIMIT 1`;
  const a = rows[0];
  if (!a || a.state !== "sealed") throw new DomainError("ARTIFACT.NOT_FOUND", "artifact not found");
  // Expired by retention (issue 21): refused from the moment the eviction commits, before the bytes go.
  const gone = a.expired_at ?? a.object_deleted_at;
  if (gone)
    throw new DomainError("ARTIFACT.EXPIRED", `artifact ${a.name} has expired: its bytes were deleted`, {
      deleted_at: gone.toISOString(),
    });
  // Downloads of bytes that disagree with their signed provenance are refused, never deleted (issue 17).
  if (a.quarantine) throw quarantined(a.quarantine);
  // The key is fetched before any byte: a destroyed (or due) key is a clean 410 SHRED.KEY_DESTROYED.
  const seal = await sealInfoFor(store, a.org_id, a);
  if (seal)
    return {
      kind: "stream",
      name: a.name,
      sizeBytes: Number(a.size_bytes),
      sha256: a.sha256,
      body: await openSealedObject(store, a.object_key, seal),
    };
  return {
    kind: "redirect",
    url: await presignDownload(store, a.object_key, a.name),
    expiresInSec: store.settings.downloadUrlTtlSec,
    name: a.name,
  };
}
