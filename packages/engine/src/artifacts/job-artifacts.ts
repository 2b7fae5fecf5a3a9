import type { Db } from "@kiln/db";
import { attestationStateOf, DomainError, type AttestationState, type RetentionClass } from "@kiln/domain";
import type { ArtifactStore } from "./artifact-context.ts";
import { downloadArtifact, type ArtifactDownload } from "./download-artifact.ts";

export interface JobArtifactView {
  /** The artifact's id (its sealed generation): GET /v1/artifacts/{id}/download and /attestation. */
  id: string;
  name: string;
  size: number;
  sha256: string;
  attempt_epoch: number;
  /** pending | logged | verified | quarantined (issue 17). */
  attestation_state: AttestationState;
  quarantine_reason: string | null;
  /** release | default_branch | other (issue 21); null for artifacts sealed before classes existed. */
  retention_class: RetentionClass | null;
  /** When retention evicts it (unless a pointer, its history or a hold keeps it); null: unclassified. */
  expires_at: string | null;
  /** Set once retention evicted it: downloads answer 410 ARTIFACT.EXPIRED. */
  expired_at: string | null;
}

/**
 * GET /v1/jobs/{job_id}/artifacts: the job's bound artifacts (a job a re-run pinned shows those of
 * the job it reuses). Another org's job is a 404.
 */
export async function listJobArtifacts(db: Db, input: { orgId: string; jobId: string }): Promise<JobArtifactView[]> {
  await assertJobVisible(db, input);
  const rows = await db.$queryRaw<
    {
      id: string;
      name: string;
      size_bytes: bigint;
      sha256: string;
      epoch: number;
      state: "logged" | "verified" | "mismatch" | null;
      reason: string | null;
      retention_class: RetentionClass | null;
      expires_at: Date | null;
      expired_at: Date | null;
    }[]
  >`
    SELECT g.id, b.name, g.size_bytes, g.sha256, g.epoch, a.state, q.reason, g.retention_class, g.expires_at, g.expired_at
    FROM job_run j JOIN artifact_binding b ON b.job_id = COALESCE(j.reused_from_job_id, j.id)
    JOIN artifact_generation g ON g.id = b.generation_id
    LEFT JOIN attestation_subject s ON s.generation_id = g.id
    LEFT JOIN attestation a ON a.id = s.attestation_id
    LEFT JOIN artifact_quarantine q ON q.generation_id = g.id
    WHERE j.id = ${input.jobId}::uuid AND j.org_id = ${input.orgId}::uuid ORDER BY b.name`;
  return rows.map((r) => ({
    id: r.id,
    name: r.name,
    size: Number(r.size_bytes),
    sha256: r.sha256,
    attempt_epoch: r.epoch,
    // Bindings exist only for a successful job, so a missing attestation is pending, not none.
    attestation_state: attestationStateOf({ jobSucceeded: true, attestation: r.state, quarantined: r.reason !== null }),
    quarantine_reason: r.reason,
    retention_class: r.retention_class,
    expires_at: r.expires_at?.toISOString() ?? null,
    expired_at: r.expired_at?.toISOString() ?? null,
  }));
}

/**
 * A job's artifact by name (GET /v1/jobs/{job_id}/artifacts/{name}): the job's canonical binding
 * resolved in the caller's org, then served as the artifact id is (downloadArtifact), so a sealed
 * artifact (ADR 0037) is opened and streamed here too, never redirected to its ciphertext.
 */
export async function jobArtifactDownload(
  db: Db,
  store: ArtifactStore,
  input: { orgId: string; jobId: string; name: string },
): Promise<ArtifactDownload> {
  const rows = await db.$queryRaw<{ id: string }[]>`
    SELECT g.id::text
    FROM job_run j JOIN artifact_binding b ON b.job_id = COALESCE(j.reused_from_job_id, j.id)
    JOIN artifact_generation g ON g.id = b.generation_id AND g.state = 'sealed'
    WHERE j.id = ${input.jobId}::uuid AND b.name = ${input.name} AND j.org_id = ${input.orgId}::uuid`;
  const g = rows[0];
  if (!g) throw new DomainError("ARTIFACT.NOT_FOUND", "artifact not found");
  return downloadArtifact(db, store, { artifactId: g.id, reader: { orgId: input.orgId } });
}

async function assertJobVisible(db: Db, input: { orgId: string; jobId: string }): Promise<void> {
  const rows = await db.$queryRaw<
    { id: string }[]
  >`SELECT id FROM job_run WHERE id = ${input.jobId}::uuid AND org_id = ${input.orgId}::uuid`;
  if (!rows[0]) throw new DomainError("JOB.NOT_FOUND", "job not found");
}
