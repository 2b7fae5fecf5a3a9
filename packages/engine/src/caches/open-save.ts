import { randomUUID } from "node:crypto";
import { withTx, type Db, type Tx } from "@kiln/db";
import { cacheObjectKey, checkCacheArchive, decideCacheBind, decideCacheWrite, DomainError } from "@kiln/domain";
import type { JobClaims } from "../attempts/index.ts";
import { lockBinding, recordConflict, releaseLostBinding } from "./cache-bindings.ts";
import type { CacheStore } from "./cache-context.ts";
import { recordCacheTransition } from "./cache-journal.ts";
import { lockCacheScope, type CacheScope } from "./cache-scope.ts";
import { presignCachePut } from "./cache-store-ops.ts";

export interface OpenSaveRequest {
  inputs: { path: string; sha256: string | null }[];
  sizeBytes: number;
  sha256: string;
  unpackedBytes: number;
  entryCount: number;
}

export type SaveSession =
  | { state: "upload"; entryId: string; key: string; url: string; urlExpiresAt: string }
  | { state: "already_bound" | "conflict"; key: string };

export const UNTRUSTED_WRITE_MESSAGE = "cache write refused: untrusted run";
const NO_REF_WRITE_MESSAGE = "cache write refused: the run has no ref to namespace its entries by";

/**
 * Write trusted (seed 002): an untrusted run is refused with a named reason. A key that is already
 * bound needs no upload: the same bytes are a no-op, other bytes are recorded as a conflict right
 * away. Otherwise a fresh immutable entry (fresh object key) and a presigned PUT for it.
 */
export async function openCacheSave(
  db: Db,
  store: CacheStore,
  claims: JobClaims,
  req: OpenSaveRequest,
): Promise<SaveSession> {
  // A binding whose blob is gone is released first (its own store lookup, no transaction open).
  const peek = await withTx(db, "cache-open-peek", (tx) => lockCacheScope(tx, claims, req.inputs));
  if (decideCacheWrite(peek.trustClass).allowed) await releaseLostBinding(db, store, peek.key, req.sha256);
  const opened = await withTx(db, "cache-open-save", async (tx) => {
    const scope = await lockCacheScope(tx, claims, req.inputs);
    const write = decideCacheWrite(scope.trustClass);
    if (!write.allowed) throw new DomainError("CACHE.WRITE_REFUSED", UNTRUSTED_WRITE_MESSAGE, { reason: write.reason });
    // Writes are namespaced by the run's ref; a run without one (admitted before refs) has none to write.
    if (scope.ref === null) throw new DomainError("CACHE.WRITE_REFUSED", NO_REF_WRITE_MESSAGE, { reason: "no_ref" });
    checkCacheArchive(store.settings.limits, req);
    const { attempt } = scope;
    // An archive larger than the org's whole quota would be evicted by the next pass: refuse it now.
    const quota = await tx.$queryRaw<
      { q: bigint | null }[]
    >`SELECT cache_quota_bytes AS q FROM org WHERE id = ${attempt.orgId}::uuid`;
    const quotaBytes =
      quota[0]?.q === null || quota[0]?.q === undefined ? store.settings.defaultQuotaBytes : Number(quota[0].q);
    if (req.sizeBytes > quotaBytes)
      throw new DomainError(
        "CACHE.TOO_LARGE",
        `cache archive is ${req.sizeBytes} bytes; the org's cache quota is ${quotaBytes}`,
      );
    const bound = await lockBinding(tx, scope.key);
    const decision = decideCacheBind(bound, req);
    const own = await tx.$queryRaw<
      { id: string; state: string; sha256: string; size_bytes: bigint; object_key: string }[]
    >`
      SELECT id, state, sha256, size_bytes, object_key FROM cache_entry WHERE attempt_id = ${attempt.id}::uuid AND cache_key = ${scope.key} FOR UPDATE`;
    const mine = own[0];
    if (mine && (mine.sha256 !== req.sha256 || Number(mine.size_bytes) !== req.sizeBytes)) {
      throw new DomainError("REQUEST.INVALID", "this attempt already opened a save of other bytes for this key");
    }
    if (decision !== "bound" && bound && bound.id !== mine?.id) {
      if (decision === "conflict") {
        const id = mine?.id ?? randomUUID();
        if (!mine) {
          // The rejected bytes are never uploaded; the row exists so the conflict names a writer.
          await insertEntry(tx, {
            id,
            scope,
            req,
            state: "abandoned",
            abandonReason: "conflict",
            objectKey: cacheObjectKey({ orgId: attempt.orgId, repoId: scope.repoId, entryId: id }),
          });
          await recordCacheTransition(tx, {
            orgId: attempt.orgId,
            runId: attempt.runId,
            jobId: attempt.jobId,
            attemptId: attempt.id,
            from: null,
            to: "abandoned",
            reason: "conflict",
            data: {
              entry_id: id,
              cache_key: scope.key,
              sha256: req.sha256,
              bound_entry_id: bound.id,
              bound_sha256: bound.sha256,
            },
          });
        }
        await recordConflict(tx, {
          orgId: attempt.orgId,
          repoId: scope.repoId,
          cacheKey: scope.key,
          bound,
          rejectedEntryId: id,
          rejectedSha256: req.sha256,
          attemptId: attempt.id,
        });
      }
      return { state: decision, key: scope.key } as const;
    }
    if (mine) {
      if (mine.state === "bound") return { state: "already_bound", key: scope.key } as const;
      if (mine.state !== "uploading")
        throw new DomainError("CACHE.UPLOAD_NOT_FOUND", `this attempt's save is ${mine.state}`);
      return { state: "upload", entryId: mine.id, key: scope.key, objectKey: mine.object_key } as const;
    }
    const id = randomUUID();
    const objectKey = cacheObjectKey({ orgId: attempt.orgId, repoId: scope.repoId, entryId: id });
    await insertEntry(tx, { id, scope, req, state: "uploading", abandonReason: null, objectKey });
    await recordCacheTransition(tx, {
      orgId: attempt.orgId,
      runId: attempt.runId,
      jobId: attempt.jobId,
      attemptId: attempt.id,
      from: null,
      to: "uploading",
      reason: "save_opened",
      data: { entry_id: id, cache_key: scope.key, epoch: attempt.epoch, size_bytes: req.sizeBytes, sha256: req.sha256 },
    });
    return { state: "upload", entryId: id, key: scope.key, objectKey } as const;
  });
  if (opened.state !== "upload") return opened;
  return {
    state: "upload",
    entryId: opened.entryId,
    key: opened.key,
    url: await presignCachePut(store, opened.objectKey, req.sizeBytes),
    urlExpiresAt: new Date(Date.now() + store.settings.uploadUrlTtlSec * 1000 - 5_000).toISOString(),
  };
}

async function insertEntry(
  tx: Tx,
  e: {
    id: string;
    scope: CacheScope;
    req: OpenSaveRequest;
    state: "uploading" | "abandoned";
    abandonReason: string | null;
    objectKey: string;
  },
): Promise<void> {
  const { attempt } = e.scope;
  await tx.$executeRaw`
    INSERT INTO cache_entry (id, org_id, repo_id, namespace, ref, kind, cache_key, prefix_key, object_key, size_bytes, sha256, unpacked_bytes, entry_count,
                             state, abandon_reason, run_id, job_id, attempt_id, epoch, object_deleted_at)
    VALUES (${e.id}::uuid, ${attempt.orgId}::uuid, ${e.scope.repoId}::uuid, ${e.scope.namespace}, ${e.scope.ref}, ${e.scope.cache.kind}, ${e.scope.key}, ${e.scope.prefix},
            ${e.objectKey}, ${e.req.sizeBytes}::bigint, ${e.req.sha256}, ${e.req.unpackedBytes}::bigint, ${e.req.entryCount}, ${e.state}, ${e.abandonReason},
            ${attempt.runId}::uuid, ${attempt.jobId}::uuid, ${attempt.id}::uuid, ${attempt.epoch},
            CASE WHEN ${e.state} = 'abandoned' THEN now() END)`;
}
