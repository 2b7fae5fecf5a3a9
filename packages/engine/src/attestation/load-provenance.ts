// Loads everything a job's provenance says, from control-plane records only (issue 17): the run as
// frozen, the winning attempt, the bindings, what the completion transaction resolved for restores,
// the cache entries the control plane granted, and the digests of the logs it stored. Nothing the
// job reported about itself (exit codes, step names, its own digests) enters the statement.
import { createHash } from "node:crypto";
import type { Db } from "@kiln/db";
import type { ProvenanceInput, WorkflowDefinition } from "@kiln/domain";
import { readStreamBytes, type LogArchiveReader } from "../logs/index.ts";
import type { SqlPool } from "../shared/sql-pool.ts";

export interface ProvenanceRecords {
  input: ProvenanceInput;
  orgId: string;
  runId: string;
  attemptId: string;
  subjects: { generationId: string; name: string; sha256: string }[];
}

interface JobRow {
  job_id: string;
  job_name: string;
  job_index: number;
  pool: string;
  outcome: string | null;
  current_epoch: number;
  run_id: string;
  org_id: string;
  org_slug: string;
  ref: string | null;
  commit_sha: string;
  workflow_path: string;
  workflow_hash: string | null;
  inputs: unknown;
  trust_class: string;
  definition: WorkflowDefinition | null;
  full_name: string;
  clone_url: string;
  attempt_id: string;
  epoch: number;
  started_at: Date | null;
  claimed_at: Date;
  finished_at: Date | null;
  isolation: string | null;
  log_next_seq: number | null;
}

/**
 * Null when the job did not succeed at `epoch` or bound nothing: a stale attempt's report, a
 * retried job or a failed one never gets a statement.
 */
export async function loadProvenanceRecords(
  db: Db,
  logs: { pool: SqlPool; archive: LogArchiveReader },
  instanceUri: string,
  ref: { jobId: string; epoch: number },
): Promise<ProvenanceRecords | null> {
  const rows = await db.$queryRaw<JobRow[]>`
    SELECT j.id AS job_id, j.name AS job_name, j.job_index, j.pool, j.outcome, j.current_epoch,
           r.id AS run_id, r.org_id, o.slug AS org_slug, r.ref, r.commit_sha, r.workflow_path, r.workflow_hash,
           r.inputs, r.trust_class, r.definition, rp.full_name, rp.clone_url,
           a.id AS attempt_id, a.epoch, a.started_at, a.claimed_at, a.finished_at,
           s.labels->>'isolation' AS isolation, l.next_seq AS log_next_seq
    FROM job_run j
    JOIN workflow_run r ON r.id = j.run_id
    JOIN org o ON o.id = r.org_id
    JOIN repo rp ON rp.id = r.repo_id
    JOIN attempt a ON a.job_id = j.id AND a.epoch = j.current_epoch
    LEFT JOIN agent_session s ON s.id = a.session_id
    LEFT JOIN log_attempt l ON l.attempt_id = a.id
    WHERE j.id = ${ref.jobId}::uuid AND j.status = 'completed' AND j.outcome = 'success'
      AND j.current_epoch = ${ref.epoch} AND a.outcome = 'success'`;
  const j = rows[0];
  if (!j) return null;
  const subjects = await db.$queryRaw<{ generation_id: string; name: string; sha256: string }[]>`
    SELECT g.id AS generation_id, b.name, g.sha256
    FROM artifact_binding b JOIN artifact_generation g ON g.id = b.generation_id
    WHERE b.job_id = ${j.job_id}::uuid AND g.attempt_id = ${j.attempt_id}::uuid ORDER BY b.name`;
  if (subjects.length === 0) return null;

  const def = j.definition?.jobs[j.job_index];
  const restored: ProvenanceInput["restored"] = [];
  for (const r of def?.artifacts.restore ?? []) {
    // The binding the control plane resolved for this restore (grantDownload reads the same one).
    const b = await db.$queryRaw<{ sha256: string; run_id: string; job_id: string; epoch: number }[]>`
      SELECT g.sha256, g.run_id, g.job_id, g.epoch
      FROM job_run p JOIN artifact_binding b ON b.job_id = p.id AND b.name = ${r.name}
      JOIN artifact_generation g ON g.id = b.generation_id
      WHERE p.run_id = ${j.run_id}::uuid AND p.name = ${r.fromJob}`;
    const g = b[0];
    if (g)
      restored.push({
        name: r.name,
        fromJob: r.fromJob,
        sha256: g.sha256,
        runId: g.run_id,
        jobId: g.job_id,
        epoch: g.epoch,
      });
  }
  const caches = await db.$queryRaw<{ cache_key: string; sha256: string; entry_id: string }[]>`
    SELECT cache_key, sha256, entry_id FROM cache_restore_grant WHERE attempt_id = ${j.attempt_id}::uuid ORDER BY granted_at`;

  const input: ProvenanceInput = {
    instanceUri,
    org: { id: j.org_id, slug: j.org_slug },
    repo: { fullName: j.full_name, cloneUrl: j.clone_url },
    run: {
      id: j.run_id,
      ref: j.ref,
      commitSha: j.commit_sha,
      workflowPath: j.workflow_path,
      workflowSha256: j.workflow_hash,
      inputs: j.inputs,
      trustClass: j.trust_class,
    },
    job: {
      id: j.job_id,
      name: j.job_name,
      pool: j.pool,
      epoch: j.epoch,
      isolation: j.isolation === "microvm" ? "microvm" : "process",
      image: def?.image ? { ref: def.image.ref, digest: def.image.digest ?? null } : null,
    },
    startedOn: j.started_at ?? j.claimed_at,
    finishedOn: j.finished_at,
    subjects: subjects.map((s) => ({ name: s.name, sha256: s.sha256 })),
    restored,
    caches: caches.map((c) => ({ key: c.cache_key, sha256: c.sha256, entryId: c.entry_id })),
    logs: j.log_next_seq === null ? null : await logDigests(logs, j.attempt_id, j.log_next_seq),
  };
  return {
    input,
    orgId: j.org_id,
    runId: j.run_id,
    attemptId: j.attempt_id,
    subjects: subjects.map((s) => ({ generationId: s.generation_id, name: s.name, sha256: s.sha256 })),
  };
}

/** SHA-256 of each stream as the control plane stored it (journal and archive), up to its end. */
async function logDigests(
  logs: { pool: SqlPool; archive: LogArchiveReader },
  attemptId: string,
  untilSeq: number,
): Promise<{ stdoutSha256: string; stderrSha256: string }> {
  const out = { stdoutSha256: "", stderrSha256: "" };
  for (const stream of ["stdout", "stderr"] as const) {
    const h = createHash("sha256");
    for await (const b of readStreamBytes(logs.pool, logs.archive, attemptId, untilSeq, stream)) h.update(b);
    out[stream === "stdout" ? "stdoutSha256" : "stderrSha256"] = h.digest("hex");
  }
  return out;
}
