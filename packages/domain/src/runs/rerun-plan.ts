import { DomainError } from "../shared/errors.ts";
import type { Outcome } from "./outcomes.ts";

export interface RerunJob {
  jobIndex: number;
  needs: readonly number[];
  outcome: Outcome | null;
  /** Where this job's result came from when the parent itself reused it (null: it ran there). */
  reusedFrom: { runId: string; jobId: string } | null;
  jobId: string;
}

export interface RerunPlan {
  /** Jobs whose parent success is kept: each with the run and job that actually produced it. */
  pinned: { jobIndex: number; from: { runId: string; jobId: string } }[];
  /** Jobs that run again: every job that did not succeed, and every job downstream of one. */
  rerun: number[];
}

/**
 * "Re-run failed jobs" (seed 000 section 9: recreate every affected descendant and pin the reused
 * successful prefix explicitly). A job runs again if it did not succeed or if anything it needs,
 * transitively, runs again: a success that consumed a failed job's output cannot be trusted to be
 * what a fresh upstream would give it. Everything else is pinned to the attempt that produced it,
 * never to a copy: a success the parent had itself reused points at the original producer.
 */
export function planRerun(parentRunId: string, jobs: readonly RerunJob[]): RerunPlan {
  const byIndex = new Map(jobs.map((j) => [j.jobIndex, j]));
  const rerun = new Set<number>();
  const visiting = new Set<number>();
  // Memoised depth-first walk over `needs`; the definition was checked acyclic at freeze, and the
  // visiting set keeps a corrupted one from recursing forever.
  const mustRerun = (index: number): boolean => {
    if (rerun.has(index)) return true;
    const job = byIndex.get(index);
    if (!job || visiting.has(index)) return job === undefined;
    visiting.add(index);
    const again = job.outcome !== "success" || job.needs.some((n) => mustRerun(n));
    visiting.delete(index);
    if (again) rerun.add(index);
    return again;
  };
  for (const j of jobs) mustRerun(j.jobIndex);
  if (rerun.size === 0) {
    throw new DomainError("RUN.NOTHING_TO_RERUN", "every job of this run succeeded; there is nothing to re-run");
  }
  const pinned = jobs
    .filter((j) => !rerun.has(j.jobIndex))
    .map((j) => ({ jobIndex: j.jobIndex, from: j.reusedFrom ?? { runId: parentRunId, jobId: j.jobId } }))
    .sort((a, b) => a.jobIndex - b.jobIndex);
  return { pinned, rerun: [...rerun].sort((a, b) => a - b) };
}
