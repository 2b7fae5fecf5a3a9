// Provenance search (GET /v1/attestations, the auditor views): by artifact digest, commit or run,
// always within the caller's org (the org is in every query, never only in a role check).
import type { Db } from "@kiln/db";

export interface AttestationSummary {
  id: string;
  run_id: string;
  job_id: string;
  job_name: string;
  epoch: number;
  commit_sha: string;
  state: string;
  tlog_index: string;
  created_at: string;
  subjects: { artifact_id: string; name: string; sha256: string; quarantined: boolean }[];
}

export type AttestationQuery = { subjectSha256: string } | { commit: string } | { runId: string };

interface Row {
  id: string;
  run_id: string;
  job_id: string;
  job_name: string;
  epoch: number;
  commit_sha: string;
  state: string;
  tlog_index: bigint;
  created_at: Date;
  subjects: { artifact_id: string; name: string; sha256: string; quarantined: boolean }[];
}

export async function findAttestations(
  db: Db,
  orgId: string,
  q: AttestationQuery,
  limit = 100,
): Promise<AttestationSummary[]> {
  const digest = "subjectSha256" in q ? q.subjectSha256 : null;
  const commit = "commit" in q ? q.commit : null;
  const runId = "runId" in q ? q.runId : null;
  const rows = await db.$queryRaw<Row[]>`
    SELECT a.id, a.run_id, a.job_id, j.name AS job_name, a.epoch, a.commit_sha, a.state, a.tlog_index, a.created_at,
      (SELECT json_agg(json_build_object('artifact_id', s.generation_id, 'name', s.name, 'sha256', s.sha256,
                                         'quarantined', q.generation_id IS NOT NULL) ORDER BY s.name)
       FROM attestation_subject s LEFT JOIN artifact_quarantine q ON q.generation_id = s.generation_id
       WHERE s.attestation_id = a.id) AS subjects
    FROM attestation a JOIN job_run j ON j.id = a.job_id
    WHERE a.org_id = ${orgId}::uuid
      AND (${digest}::text IS NULL OR a.id IN (SELECT attestation_id FROM attestation_subject WHERE sha256 = ${digest}::text))
      AND (${commit}::text IS NULL OR a.commit_sha LIKE ${commit ? `${commit}%` : ""})
      AND (${runId}::uuid IS NULL OR a.run_id = ${runId}::uuid)
    ORDER BY a.created_at DESC, a.id LIMIT ${limit}`;
  return rows.map((r) => ({
    id: r.id,
    run_id: r.run_id,
    job_id: r.job_id,
    job_name: r.job_name,
    epoch: r.epoch,
    commit_sha: r.commit_sha,
    state: r.state,
    tlog_index: String(r.tlog_index),
    created_at: r.created_at.toISOString(),
    subjects: r.subjects ?? [],
  }));
}

export interface QuarantineAlert {
  artifact_id: string;
  name: string;
  run_id: string;
  job_id: string;
  reason: string;
  detected_at: string;
}

/** The org home's alert: every quarantined artifact, newest first. */
export async function listQuarantines(db: Db, orgId: string, limit = 50): Promise<QuarantineAlert[]> {
  const rows = await db.$queryRaw<
    { generation_id: string; name: string; run_id: string; job_id: string; reason: string; detected_at: Date }[]
  >`
    SELECT q.generation_id, g.name, q.run_id, q.job_id, q.reason, q.detected_at
    FROM artifact_quarantine q JOIN artifact_generation g ON g.id = q.generation_id
    WHERE q.org_id = ${orgId}::uuid ORDER BY q.detected_at DESC LIMIT ${limit}`;
  return rows.map((r) => ({
    artifact_id: r.generation_id,
    name: r.name,
    run_id: r.run_id,
    job_id: r.job_id,
    reason: r.reason,
    detected_at: r.detected_at.toISOString(),
  }));
}
