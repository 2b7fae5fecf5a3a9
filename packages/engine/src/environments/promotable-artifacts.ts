import type { DbOrTx } from "@kiln/db";
import { DomainError } from "@kiln/domain";
import { UUID } from "./env-actor.ts";

// What a person may pick when requesting a promotion (issue 29): the environment's repo's recent
// attested artifacts, newest first, so nobody has to know an artifact id. The org scope is in the
// query itself (the environment and every run, binding and attestation must be the caller's org):
// another org's environment answers ENV.NOT_FOUND like one that never existed, and another org's
// artifacts are never listed. Only what the provenance gate could pass is offered: sealed, bytes
// kept, bound, attested (logged or verified, not a mismatch) and not quarantined.

export interface PromotableArtifact {
  artifactId: string;
  /** The artifact's name as its job bound it. */
  name: string;
  job: string;
  runId: string;
  commitSha: string;
  /** The sealed bytes' sha256, as the promotion records it. */
  digest: string;
  sizeBytes: number | null;
  sealedAt: string;
  attestation: "logged" | "verified";
}

type Row = {
  id: string;
  name: string;
  job: string;
  run_id: string;
  commit_sha: string;
  sha256: string;
  size_bytes: bigint | null;
  sealed_at: Date;
  attestation_state: "logged" | "verified";
};

export const PROMOTABLE_LIMIT_MAX = 100;

export async function listPromotableArtifacts(
  db: DbOrTx,
  orgId: string,
  environmentId: string,
  opts: { limit?: number } = {},
): Promise<PromotableArtifact[]> {
  if (!UUID.test(environmentId)) throw new DomainError("ENV.NOT_FOUND", "no such environment");
  const limit = Math.min(Math.max(Math.trunc(opts.limit ?? 20), 1), PROMOTABLE_LIMIT_MAX);
  const env = await db.$queryRaw<{ repo_id: string }[]>`
    SELECT repo_id FROM environment WHERE id = ${environmentId}::uuid AND org_id = ${orgId}::uuid`;
  if (!env[0]) throw new DomainError("ENV.NOT_FOUND", "no such environment");
  const rows = await db.$queryRaw<Row[]>`
    SELECT g.id, b.name, j.name AS job, g.run_id, r.commit_sha, g.sha256, g.size_bytes, g.sealed_at,
           a.state AS attestation_state
    FROM workflow_run r
    JOIN artifact_binding b ON b.run_id = r.id AND b.expired_at IS NULL
    JOIN artifact_generation g ON g.id = b.generation_id
    JOIN job_run j ON j.id = b.job_id AND j.run_id = r.id
    JOIN attestation_subject s ON s.generation_id = g.id AND s.sha256 = g.sha256
    JOIN attestation a ON a.id = s.attestation_id AND a.org_id = r.org_id
    WHERE r.org_id = ${orgId}::uuid AND r.repo_id = ${env[0].repo_id}::uuid
      AND g.state = 'sealed' AND g.object_deleted_at IS NULL AND g.sha256 IS NOT NULL AND g.sealed_at IS NOT NULL
      AND a.state IN ('logged', 'verified')
      AND NOT EXISTS (SELECT 1 FROM artifact_quarantine q WHERE q.generation_id = g.id)
    ORDER BY g.sealed_at DESC, g.id
    LIMIT ${limit}`;
  return rows.map((r) => ({
    artifactId: r.id,
    name: r.name,
    job: r.job,
    runId: r.run_id,
    commitSha: r.commit_sha,
    digest: r.sha256,
    sizeBytes: r.size_bytes === null ? null : Number(r.size_bytes),
    sealedAt: r.sealed_at.toISOString(),
    attestation: r.attestation_state,
  }));
}
