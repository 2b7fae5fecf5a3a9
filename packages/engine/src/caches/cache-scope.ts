import { createHash } from "node:crypto";
import type { Tx } from "@kiln/db";
import {
  branchRef,
  cacheReadNamespace,
  cacheReadRefs,
  deriveCacheKey,
  DomainError,
  runCacheRef,
  type CacheKey,
  type CacheNamespace,
  type TrustClass,
  type WorkflowJob,
} from "@kiln/domain";
import { lockCurrentAttempt, type AttemptView, type JobClaims } from "../attempts/index.ts";

export interface CacheScope extends CacheKey {
  attempt: AttemptView;
  cache: NonNullable<WorkflowJob["cache"]>;
  repoId: string;
  trustClass: TrustClass;
  namespace: CacheNamespace;
  /**
   * The run's own ref, the one its writes are namespaced by (key/prefix above are derived for it);
   * null for a run that carries no usable ref, which may read the default branch but never write.
   */
  ref: string | null;
  /** What restores look in, in order: the run's own ref, then the default branch (cacheReadRefs). */
  reads: (CacheKey & { ref: string })[];
}

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

/**
 * Fences the caller (current epoch, live lease, running run) and derives the key from what the
 * control plane holds itself: the frozen job's cache block and image digest, the run's repo and
 * trust class (fixed at admission), and the platform its agent session registered. Only the input
 * digests come from the agent, which hashed the pinned checkout before any step could touch it.
 */
export async function lockCacheScope(
  tx: Tx,
  claims: JobClaims,
  inputs: readonly { path: string; sha256: string | null }[],
): Promise<CacheScope> {
  const { attempt, job } = await lockCurrentAttempt(tx, claims);
  const cache = job.cache;
  if (!cache) throw new DomainError("CACHE.NOT_DECLARED", "this job declares no cache");
  const declared = cache.inputs;
  if (inputs.length !== declared.length || inputs.some((i, n) => i.path !== declared[n])) {
    throw new DomainError(
      "REQUEST.INVALID",
      `inputs must be the job's declared cache inputs in order: ${JSON.stringify(declared)}`,
    );
  }
  const rows = await tx.$queryRaw<
    {
      repo_id: string;
      trust_class: TrustClass;
      ref: string | null;
      default_branch: string;
      labels: { os?: unknown; arch?: unknown };
    }[]
  >`
    SELECT r.repo_id, r.trust_class, r.ref, rp.default_branch, s.labels
    FROM attempt a JOIN workflow_run r ON r.id = a.run_id JOIN repo rp ON rp.id = r.repo_id
    JOIN agent_session s ON s.id = a.session_id
    WHERE a.id = ${attempt.id}::uuid`;
  const row = rows[0];
  if (!row) throw new DomainError("ATTEMPT.NOT_FOUND", "unknown attempt");
  const namespace = cacheReadNamespace(row.trust_class);
  const ownRef = row.ref === null ? null : runCacheRef(row.ref);
  const defaultRef = branchRef(row.default_branch);
  const keyFor = (ref: string) =>
    deriveCacheKey(
      {
        orgId: attempt.orgId,
        repoId: row.repo_id,
        namespace,
        ref,
        os: typeof row.labels.os === "string" ? row.labels.os : "unknown",
        arch: typeof row.labels.arch === "string" ? row.labels.arch : "unknown",
        imageDigest: job.image?.digest ?? null,
        kind: cache.kind,
        version: cache.version,
        paths: cache.paths,
        inputs,
      },
      sha256,
    );
  const reads = cacheReadRefs(ownRef, defaultRef).map((ref) => ({ ...keyFor(ref), ref }));
  const own = keyFor(ownRef ?? defaultRef);
  return { ...own, attempt, cache, repoId: row.repo_id, trustClass: row.trust_class, namespace, ref: ownRef, reads };
}
