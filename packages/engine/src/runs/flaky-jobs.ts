import type { Db } from "@kiln/db";
import { DomainError } from "@kiln/domain";

// Flake detection (issue 20, seed 002: "flake rate detected and reported, never auto-quarantined").
// A job is flaky when the same repo, commit, definition digest (workflow_hash), job name and matrix
// values produced both a success and a user failure, in different runs or different attempts. Only
// attempts count: a job a re-run pinned has none, so reuse never looks like a second opinion. Other
// outcomes (platform failures, cancels, timeouts, policy) say nothing about the code, so they do not
// count either. Nothing here changes what runs: the flag is information for people.

export interface FlakyJob {
  name: string;
  matrix: Record<string, string> | null;
  /** Distinct (commit, definition) pairs on which the job both passed and failed. */
  commits: number;
  /** Attempts that ended success or user_failure on those pairs. */
  attempts: number;
  last_seen: string;
  last_commit_sha: string;
  last_run_id: string;
}

interface FlakyRow {
  name: string;
  matrix_values: Record<string, string> | null;
  commits: bigint;
  attempts: bigint;
  last_seen: Date;
  last_commit_sha: string;
  last_run_id: string;
}

/**
 * GET /v1/repos/{repo_id}/flaky-jobs: the repo's flaky jobs, most recently seen first, over the runs
 * created in the last `days` (30): bounds the scan of a busy repo, and flakiness is a recent fact.
 */
export async function listFlakyJobs(
  db: Db,
  input: { orgId: string; repoId: string; limit?: number; days?: number },
): Promise<FlakyJob[]> {
  const repo = await db.$queryRaw<{ id: string }[]>`
    SELECT id FROM repo WHERE id = ${input.repoId}::uuid AND org_id = ${input.orgId}::uuid`;
  if (!repo[0]) throw new DomainError("REPO.NOT_FOUND", "repository not found");
  const rows = await db.$queryRaw<FlakyRow[]>`
    WITH tries AS (
      SELECT r.id AS run_id, r.commit_sha, r.workflow_hash, j.name, j.matrix_values, a.outcome, a.finished_at
      FROM workflow_run r
      JOIN job_run j ON j.run_id = r.id
      JOIN attempt a ON a.job_id = j.id
      WHERE r.repo_id = ${input.repoId}::uuid AND r.org_id = ${input.orgId}::uuid AND r.workflow_hash IS NOT NULL
        AND r.created_at >= now() - make_interval(days => ${input.days ?? 30}::int)
        AND a.outcome IN ('success', 'user_failure')
    ), pairs AS (
      SELECT commit_sha, workflow_hash, name, matrix_values, count(*) AS attempts, max(finished_at) AS last_seen,
             (array_agg(run_id ORDER BY finished_at DESC))[1] AS last_run_id
      FROM tries GROUP BY commit_sha, workflow_hash, name, matrix_values
      HAVING bool_or(outcome = 'success') AND bool_or(outcome = 'user_failure')
    )
    SELECT name, matrix_values, count(*) AS commits, sum(attempts)::bigint AS attempts, max(last_seen) AS last_seen,
           (array_agg(commit_sha ORDER BY last_seen DESC))[1] AS last_commit_sha,
           (array_agg(last_run_id ORDER BY last_seen DESC))[1] AS last_run_id
    FROM pairs GROUP BY name, matrix_values ORDER BY max(last_seen) DESC, name LIMIT ${input.limit ?? 100}`;
  return rows.map((r) => ({
    name: r.name,
    matrix: r.matrix_values,
    commits: Number(r.commits),
    attempts: Number(r.attempts),
    last_seen: r.last_seen.toISOString(),
    last_commit_sha: r.last_commit_sha,
    last_run_id: r.last_run_id,
  }));
}

/** Ids of this run's jobs that are flaky at the run's own commit and definition (run page, API). */
export async function flakyJobsOfRun(db: Db, input: { orgId: string; runId: string }): Promise<Set<string>> {
  const rows = await db.$queryRaw<{ id: string }[]>`
    SELECT j.id FROM workflow_run r JOIN job_run j ON j.run_id = r.id
    WHERE r.id = ${input.runId}::uuid AND r.org_id = ${input.orgId}::uuid AND r.workflow_hash IS NOT NULL
      AND EXISTS (
        SELECT 1 FROM workflow_run o JOIN job_run oj ON oj.run_id = o.id JOIN attempt a ON a.job_id = oj.id
        WHERE o.repo_id = r.repo_id AND o.commit_sha = r.commit_sha AND o.workflow_hash = r.workflow_hash
          AND o.org_id = r.org_id AND oj.name = j.name AND oj.matrix_values IS NOT DISTINCT FROM j.matrix_values
          AND a.outcome IN ('success', 'user_failure')
        HAVING bool_or(a.outcome = 'success') AND bool_or(a.outcome = 'user_failure'))`;
  return new Set(rows.map((r) => r.id));
}
