import type { DbOrTx } from "@kiln/db";
import { DomainError } from "@kiln/domain";
import { UUID } from "./env-actor.ts";

// What a promotion names: one sealed, bound artifact generation of a run of the environment's
// repo, by its id or by {run_id, job, artifact}. Scoped by org in the query: another org's
// artifact is PROMOTION.ARTIFACT_NOT_FOUND like one that never existed. Deliberately reads no
// job_run row: the required-outcomes gate's own query is the one that may time out.

export type ArtifactRef = { artifactId: string } | { runId: string; job: string; artifact: string };

export interface ResolvedArtifact {
  generationId: string;
  name: string;
  digest: string;
  runId: string;
  jobId: string;
  attestationId: string | null;
}

type Row = {
  id: string;
  name: string;
  sha256: string | null;
  run_id: string;
  job_id: string;
  attestation_id: string | null;
};

const notFound = () => new DomainError("PROMOTION.ARTIFACT_NOT_FOUND", "no such sealed artifact in this repo");

export async function resolveArtifact(
  db: DbOrTx,
  orgId: string,
  repoId: string,
  ref: ArtifactRef,
): Promise<ResolvedArtifact> {
  let rows: Row[];
  if ("artifactId" in ref) {
    if (!UUID.test(ref.artifactId)) throw notFound();
    rows = await db.$queryRaw<Row[]>`
      SELECT g.id, g.name, g.sha256, g.run_id, g.job_id, s.attestation_id
      FROM artifact_generation g
      JOIN artifact_binding b ON b.generation_id = g.id
      JOIN workflow_run r ON r.id = g.run_id
      LEFT JOIN attestation_subject s ON s.generation_id = g.id
      WHERE g.id = ${ref.artifactId}::uuid AND r.org_id = ${orgId}::uuid AND r.repo_id = ${repoId}::uuid
        AND g.state = 'sealed' AND g.object_deleted_at IS NULL`;
  } else {
    if (!UUID.test(ref.runId)) throw notFound();
    // The job by name: a job_run read, but by the run's own jobs' index before any gate runs.
    rows = await db.$queryRaw<Row[]>`
      SELECT g.id, g.name, g.sha256, g.run_id, g.job_id, s.attestation_id
      FROM artifact_binding b
      JOIN artifact_generation g ON g.id = b.generation_id
      JOIN workflow_run r ON r.id = b.run_id
      JOIN job_run j ON j.id = b.job_id
      LEFT JOIN attestation_subject s ON s.generation_id = g.id
      WHERE b.run_id = ${ref.runId}::uuid AND j.name = ${ref.job} AND b.name = ${ref.artifact}
        AND r.org_id = ${orgId}::uuid AND r.repo_id = ${repoId}::uuid
        AND g.state = 'sealed' AND g.object_deleted_at IS NULL`;
    if (rows.length > 1)
      throw new DomainError(
        "PROMOTION.ARTIFACT_AMBIGUOUS",
        `${rows.length} jobs named ${ref.job} bound ${ref.artifact}; use artifact_id`,
      );
  }
  const g = rows[0];
  if (!g || !g.sha256) throw notFound();
  return {
    generationId: g.id,
    name: g.name,
    digest: g.sha256,
    runId: g.run_id,
    jobId: g.job_id,
    attestationId: g.attestation_id,
  };
}
