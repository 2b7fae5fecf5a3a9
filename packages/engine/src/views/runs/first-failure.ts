import { isSecondaryCause } from "@kiln/domain";

export interface FirstFailure {
  job_id: string;
  job_name: string;
  outcome: string;
  cause: string | null;
  cause_message: string | null;
  exit_code: number | null;
  /** 1-based step number, when the cause names one (the agent reports "step N (command) ..."). */
  step_number: number | null;
  step_command: string | null;
}

interface JobLike {
  id: string;
  name: string;
  index: number;
  outcome: string | null;
  cause: string | null;
  cause_message: string | null;
  attempts: { exit_code: number | null; cause_message: string | null }[];
}

const STEP = /^step (\d+) \(/;

/**
 * The job that made the run red, by the same rule as the run's own outcome (deriveRunOutcome): the
 * lowest-index job that did not succeed and was not merely skipped because something it needed
 * failed, so the summary names the root cause rather than its casualties.
 */
export function findFirstFailure(
  jobs: readonly JobLike[],
  steps: ReadonlyMap<number, readonly string[]>,
): FirstFailure | null {
  const job = [...jobs]
    .filter((j) => j.outcome !== null && j.outcome !== "success" && !isSecondaryCause(j.cause))
    .sort((a, b) => a.index - b.index)[0];
  if (!job || !job.outcome) return null;
  const last = job.attempts[job.attempts.length - 1];
  const message = job.cause_message ?? last?.cause_message ?? null;
  const m = message ? STEP.exec(message) : null;
  const stepNumber = m?.[1] ? Number(m[1]) : null;
  return {
    job_id: job.id,
    job_name: job.name,
    outcome: job.outcome,
    cause: job.cause,
    cause_message: message,
    exit_code: last?.exit_code ?? null,
    step_number: stepNumber,
    step_command: stepNumber ? (steps.get(job.index)?.[stepNumber - 1] ?? null) : null,
  };
}
