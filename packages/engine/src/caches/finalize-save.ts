import { withTx, type Db, type Tx } from "@kiln/db";
import { decideCacheBind, decideCacheWrite, DomainError, type TrustClass } from "@kiln/domain";
import { lockCurrentAttempt, type JobClaims } from "../attempts/index.ts";
import { lockBinding, recordConflict } from "./cache-bindings.ts";
import type { CacheStore } from "./cache-context.ts";
import { recordCacheTransition } from "./cache-journal.ts";
import { readBackCache } from "./cache-store-ops.ts";
import { UNTRUSTED_WRITE_MESSAGE } from "./open-save.ts";

export interface SaveResult {
  state: "bound" | "already_bound" | "conflict";
  entryId: string;
  key: string;
}

interface EntryRow {
  id: string;
  org_id: string;
  repo_id: string;
  namespace: string;
  ref: string | null;
  cache_key: string;
  prefix_key: string;
  object_key: string;
  size_bytes: bigint;
  sha256: string;
  state: string;
  abandon_reason: string | null;
  run_id: string;
  job_id: string;
  attempt_id: string;
  epoch: number;
  trust_class: TrustClass;
}

/**
 * Verifies the uploaded blob (read back and hashed by the control plane) and binds its key
 * first-writer-wins, in a transaction that re-checks the writer is still the current epoch.
 * Idempotent: asking again after a lost answer returns the same outcome.
 */
export async function finalizeCacheSave(
  db: Db,
  store: CacheStore,
  claims: JobClaims,
  entryId: string,
): Promise<SaveResult> {
  const e = await withTx(db, "cache-finalize-check", async (tx) => {
    await lockCurrentAttempt(tx, claims);
    return loadOwnEntry(tx, claims, entryId);
  });
  const settled = settledAnswer(e);
  if (settled) return settled;
  if (e.state !== "uploading") throw new DomainError("CACHE.UPLOAD_NOT_FOUND", `the save is ${e.state}`);

  const observed = await readBackCache(store, e.object_key);
  if (observed.sizeBytes !== Number(e.size_bytes) || observed.sha256 !== e.sha256) {
    await withTx(db, "cache-abandon", (tx) =>
      abandon(tx, e, "verification_failed", { observed_size: observed.sizeBytes, observed_sha256: observed.sha256 }),
    );
    throw new DomainError(
      "CACHE.VERIFICATION_FAILED",
      `stored object is ${observed.sizeBytes} bytes with sha256 ${observed.sha256 || "-"}; expected ${Number(e.size_bytes)} bytes with sha256 ${e.sha256}`,
    );
  }

  // A binder that committed between our look and our insert wins; the next pass decides against it.
  for (let pass = 0; pass < 3; pass++) {
    const r = await bindOnce(db, claims, entryId);
    if (r) return r;
  }
  throw new DomainError("CACHE.STORE_UNAVAILABLE", "could not settle the binding under contention; finalize again");
}

async function bindOnce(db: Db, claims: JobClaims, entryId: string): Promise<SaveResult | null> {
  return withTx(db, "cache-bind", async (tx) => {
    // The linearisation point: a fenced writer never binds, even with verified bytes.
    await lockCurrentAttempt(tx, claims);
    const now = await loadOwnEntry(tx, claims, entryId, true);
    const again = settledAnswer(now);
    if (again) return again;
    if (now.state !== "uploading") throw new DomainError("CACHE.UPLOAD_NOT_FOUND", `the save is ${now.state}`);
    // Trust was checked at open; checked again because a binding is the one thing that must never come from an untrusted run.
    if (!decideCacheWrite(now.trust_class).allowed)
      throw new DomainError("CACHE.WRITE_REFUSED", UNTRUSTED_WRITE_MESSAGE, { reason: "untrusted_run" });
    const bound = await lockBinding(tx, now.cache_key);
    const decision = decideCacheBind(bound, now);
    if (decision === "bound") {
      const inserted = await tx.$executeRaw`
        INSERT INTO cache_binding (cache_key, org_id, repo_id, namespace, ref, prefix_key, entry_id)
        VALUES (${now.cache_key}, ${now.org_id}::uuid, ${now.repo_id}::uuid, ${now.namespace}, ${now.ref}, ${now.prefix_key}, ${now.id}::uuid)
        ON CONFLICT (cache_key) DO NOTHING`;
      if (inserted !== 1) return null;
      await tx.$executeRaw`UPDATE cache_entry SET state = 'bound', bound_at = now(), last_used_at = now() WHERE id = ${now.id}::uuid AND state = 'uploading'`;
      await recordCacheTransition(tx, {
        orgId: now.org_id,
        runId: now.run_id,
        jobId: now.job_id,
        attemptId: now.attempt_id,
        from: "uploading",
        to: "bound",
        reason: "verified",
        data: {
          entry_id: now.id,
          cache_key: now.cache_key,
          epoch: now.epoch,
          size_bytes: Number(now.size_bytes),
          sha256: now.sha256,
        },
      });
      return { state: "bound", entryId: now.id, key: now.cache_key };
    }
    if (!bound) throw new Error("unreachable: a non-bound decision needs a bound entry");
    if (decision === "conflict") {
      await recordConflict(tx, {
        orgId: now.org_id,
        repoId: now.repo_id,
        cacheKey: now.cache_key,
        bound,
        rejectedEntryId: now.id,
        rejectedSha256: now.sha256,
        attemptId: now.attempt_id,
      });
    }
    await abandon(tx, now, decision, { bound_entry_id: bound.id, bound_sha256: bound.sha256 });
    return { state: decision, entryId: now.id, key: now.cache_key };
  });
}

function settledAnswer(e: EntryRow): SaveResult | null {
  if (e.state === "bound") return { state: "bound", entryId: e.id, key: e.cache_key };
  if (e.state === "abandoned" && (e.abandon_reason === "conflict" || e.abandon_reason === "already_bound")) {
    return { state: e.abandon_reason, entryId: e.id, key: e.cache_key };
  }
  return null;
}

async function loadOwnEntry(tx: Tx, claims: JobClaims, id: string, lock = false): Promise<EntryRow> {
  const rows = lock
    ? await tx.$queryRaw<EntryRow[]>`
        SELECT e.id, e.org_id, e.repo_id, e.namespace, e.ref, e.cache_key, e.prefix_key, e.object_key, e.size_bytes, e.sha256, e.state, e.abandon_reason,
               e.run_id, e.job_id, e.attempt_id, e.epoch, r.trust_class
        FROM cache_entry e JOIN workflow_run r ON r.id = e.run_id
        WHERE e.id = ${id}::uuid AND e.attempt_id = ${claims.attemptId}::uuid FOR UPDATE OF e`
    : await tx.$queryRaw<EntryRow[]>`
        SELECT e.id, e.org_id, e.repo_id, e.namespace, e.ref, e.cache_key, e.prefix_key, e.object_key, e.size_bytes, e.sha256, e.state, e.abandon_reason,
               e.run_id, e.job_id, e.attempt_id, e.epoch, r.trust_class
        FROM cache_entry e JOIN workflow_run r ON r.id = e.run_id
        WHERE e.id = ${id}::uuid AND e.attempt_id = ${claims.attemptId}::uuid`;
  const row = rows[0];
  if (!row) throw new DomainError("CACHE.UPLOAD_NOT_FOUND", "no such cache save for this attempt");
  return row;
}

/** Unbound bytes are deleted later by the eviction worker (no store call inside a transaction). */
async function abandon(tx: Tx, e: EntryRow, reason: string, data: Record<string, unknown>): Promise<void> {
  const n = await tx.$executeRaw`
    UPDATE cache_entry SET state = 'abandoned', abandon_reason = ${reason} WHERE id = ${e.id}::uuid AND state = 'uploading'`;
  if (n === 1) {
    await recordCacheTransition(tx, {
      orgId: e.org_id,
      runId: e.run_id,
      jobId: e.job_id,
      attemptId: e.attempt_id,
      from: "uploading",
      to: "abandoned",
      reason,
      data: { entry_id: e.id, ...data },
    });
  }
}
