import type { Db } from "@kiln/db";
import { DomainError } from "@kiln/domain";
import type { ArtifactStore } from "./artifact-context.ts";
import { presignDownload } from "./store-ops.ts";

export interface JobArtifactView {
  name: string;
  size: number;
  sha256: string;
  attempt_epoch: number;
}

/**
 * GET /v1/jobs/{job_id}/artifacts: the job's bound artifacts (a job a re-run pinned shows those of
 * the job it reuses). Another org's job is a 404.
 */
export async function listJobArtifacts(db: Db, input: { orgId: string; jobId: string }): Promise<JobArtifactView[]> {
  await assertJobVisible(db, input);
  const rows = await db.$queryRaw<{ name: string; size_bytes: bigint; sha256: string; epoch: number }[]>`
    SELECT b.name, g.size_bytes, g.sha256, g.epoch
    FROM job_run j JOIN artifact_binding b ON b.job_id = COALESCE(j.reused_from_job_id, j.id)
    JOIN artifact_generation g ON g.id = b.generation_id
    WHERE j.id = ${input.jobId}::uuid AND j.org_id = ${input.orgId}::uuid ORDER BY b.name`;
  return rows.map((r) => ({ name: r.name, size: Number(r.size_bytes), sha256: r.sha256, attempt_epoch: r.epoch }));
}

/** GET /v1/jobs/{job_id}/artifacts/{name}: a short-lived presigned URL for the bound generation. */
export async function artifactDownloadUrl(
  db: Db,
  store: ArtifactStore,
  input: { orgId: string; jobId: string; name: string },
): Promise<string> {
  const rows = await db.$queryRaw<{ object_key: string }[]>`
    SELECT g.object_key
    FROM job_run j JOIN artifact_binding b ON b.job_id = COALESCE(j.reused_from_job_id, j.id)
    JOIN artifact_generation g ON g.id = b.generation_id AND g.state = 'sealed'
    WHERE j.id = ${input.jobId}::uuid AND b.name = ${input.name} AND j.org_id = ${input.orgId}::uuid`;
  const g = rows[0];
  if (!g) throw new DomainError("ARTIFACT.NOT_FOUND", "artifact not found");
  return presignDownload(store, g.object_key, input.name);
}

async function assertJobVisible(db: Db, input: { orgId: string; jobId: string }): Promise<void> {
  const rows = await db.$queryRaw<
    { id: string }[]
  >`SELECT id FROM job_run WHERE id = ${input.jobId}::uuid AND org_id = ${input.orgId}::uuid`;
  if (!rows[0]) throw new DomainError("JOB.NOT_FOUND", "job not found");
}
