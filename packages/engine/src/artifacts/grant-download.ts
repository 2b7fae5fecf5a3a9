import { withTx, type Db, type Tx } from "@kiln/db";
import { DomainError, type ArtifactFormat } from "@kiln/domain";
import type { ArtifactStore } from "./artifact-context.ts";
import { lockCurrentAttempt, type JobClaims } from "../attempts/index.ts";
import { presignDownload } from "./store-ops.ts";
import { quarantined } from "./artifact-errors.ts";
import { sealInfoFor, type ArtifactSealInfo, type SealColumns } from "./artifact-seal.ts";

export interface DownloadGrant {
  generationId: string;
  producerEpoch: number;
  sizeBytes: number;
  sha256: string;
  format: ArtifactFormat;
  url: string;
  urlExpiresAt: string;
  /** The stored object is sealed (ADR 0037): the agent opens it with this while downloading. */
  seal: ArtifactSealInfo | null;
}

/**
 * A consumer's restore: resolves the canonical binding of the named producer job *in the same run*
 * and hands out a short-lived download URL with the digest the agent must verify. Only bindings
 * count: never a staged generation, an older run's artifact or a cache entry (seed 000 section 15).
 * The one exception is explicit: a producer a re-run pinned (issue 20) resolves to the binding of
 * the job it reuses, recorded on the pinned row itself, never found by searching older runs.
 */
export async function grantDownload(
  db: Db,
  store: ArtifactStore,
  claims: JobClaims,
  req: { fromJob: string; name: string },
): Promise<DownloadGrant> {
  const bound = await withTx(db, "artifact-grant-download", async (tx) => {
    const { attempt, job } = await lockCurrentAttempt(tx, claims);
    const entry = job.artifacts.restore.find((r) => r.fromJob === req.fromJob && r.name === req.name);
    if (!entry) {
      throw new DomainError(
        "ARTIFACT.NOT_DECLARED",
        `this job does not restore ${JSON.stringify(req.name)} from ${JSON.stringify(req.fromJob)}`,
      );
    }
    if (entry.promoted)
      return { ...(await pinnedGeneration(tx, attempt.orgId, entry.promoted)), org_id: attempt.orgId };
    const rows = await tx.$queryRaw<
      ({
        id: string;
        epoch: number;
        size_bytes: bigint;
        sha256: string;
        format: ArtifactFormat;
        object_key: string;
        quarantine: string | null;
        expired_at: Date | null;
      } & SealColumns)[]
    >`
      SELECT g.id, g.epoch, g.size_bytes, g.sha256, g.format, g.object_key, q.reason AS quarantine, g.expired_at,
             g.shred_key_id::text, g.shred_salt, g.shred_chunk_size, g.stored_size_bytes
      FROM job_run p
      JOIN artifact_binding b ON b.job_id = COALESCE(p.reused_from_job_id, p.id) AND b.name = ${req.name}
      JOIN artifact_generation g ON g.id = b.generation_id AND g.state = 'sealed'
      LEFT JOIN artifact_quarantine q ON q.generation_id = g.id
      WHERE p.run_id = ${attempt.runId}::uuid AND p.name = ${req.fromJob}`;
    const g = rows[0];
    if (!g)
      throw new DomainError(
        "ARTIFACT.NOT_FOUND",
        `no bound artifact ${JSON.stringify(req.name)} from job ${JSON.stringify(req.fromJob)} in this run`,
      );
    // A consumer job never restores quarantined bytes either (issue 17).
    if (g.quarantine) throw quarantined(g.quarantine);
    // A consumer never reaches an expired generation (a run still consuming it blocks eviction);
    // this guards a re-run pinned to a job whose artifacts retention has since evicted.
    if (g.expired_at) throw new DomainError("ARTIFACT.EXPIRED", "this artifact has expired: its bytes were deleted");
    return { ...g, org_id: attempt.orgId };
  });
  const url = await presignDownload(store, bound.object_key);
  // The org of the consumer's attempt: a restore only ever resolves within its own run (or, pinned,
  // its own org), so the key is looked up in that org and no other.
  const seal = await sealInfoFor(store, bound.org_id, bound);
  return {
    generationId: bound.id,
    producerEpoch: bound.epoch,
    sizeBytes: Number(bound.size_bytes),
    sha256: bound.sha256,
    format: bound.format,
    url,
    urlExpiresAt: new Date(Date.now() + store.settings.downloadUrlTtlSec * 1000).toISOString(),
    seal,
  };
}

/**
 * A deploy run's promoted artifact (issue 18, ADR 0033): the one generation the environment's
 * pointer names, pinned by id in the frozen definition, served only while it is still sealed, bound,
 * of this org, not quarantined and of exactly the pinned digest (the agent checks the bytes again).
 */
async function pinnedGeneration(
  tx: Tx,
  orgId: string,
  pin: { generationId: string; sha256: string },
): Promise<
  {
    id: string;
    epoch: number;
    size_bytes: bigint;
    sha256: string;
    format: ArtifactFormat;
    object_key: string;
  } & SealColumns
> {
  const rows = await tx.$queryRaw<
    ({
      id: string;
      epoch: number;
      size_bytes: bigint;
      sha256: string;
      format: ArtifactFormat;
      object_key: string;
      quarantine: string | null;
    } & SealColumns)[]
  >`
    SELECT g.id, g.epoch, g.size_bytes, g.sha256, g.format, g.object_key, q.reason AS quarantine,
           g.shred_key_id::text, g.shred_salt, g.shred_chunk_size, g.stored_size_bytes
    FROM artifact_generation g
    JOIN artifact_binding b ON b.generation_id = g.id
    JOIN workflow_run r ON r.id = g.run_id AND r.org_id = ${orgId}::uuid
    LEFT JOIN artifact_quarantine q ON q.generation_id = g.id
    WHERE g.id = ${pin.generationId}::uuid AND g.state = 'sealed'`;
  const g = rows[0];
  if (!g) throw new DomainError("ARTIFACT.NOT_FOUND", "the promoted artifact is no longer available");
  if (g.quarantine) throw quarantined(g.quarantine);
  if (g.sha256 !== pin.sha256)
    throw new DomainError("ARTIFACT.VERIFICATION_FAILED", "the promoted artifact's digest is not the environment's");
  return g;
}
