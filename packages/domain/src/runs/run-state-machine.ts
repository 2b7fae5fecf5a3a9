// Run and job lifecycles as transition tables. The database applies them as guarded conditional
// updates (`UPDATE ... WHERE status = <from>`); these tables are the single list of what is legal.
export const RUN_STATUSES = ["pending", "running", "cancelling", "completed"] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];

export const JOB_STATUSES = ["pending", "ready", "running", "completed"] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];

export const ATTEMPT_STATUSES = ["running", "completed"] as const;
export type AttemptStatus = (typeof ATTEMPT_STATUSES)[number];

export type RunEvent = "frozen" | "freeze_failed" | "cancel_requested" | "jobs_finished" | "stopped";
export type JobEvent =
  | "predecessors_succeeded"
  | "claimed"
  | "attempt_finished"
  | "retry_scheduled"
  | "skipped"
  | "cancelled";

type Table<S extends string, E extends string> = Readonly<Record<E, readonly (readonly [S, S])[]>>;

export const RUN_TRANSITIONS: Table<RunStatus, RunEvent> = {
  frozen: [["pending", "running"]],
  freeze_failed: [["pending", "completed"]],
  // Cancelling waits for every attempt to be confirmed stopped; a run with nothing live goes
  // straight to completed.
  cancel_requested: [
    ["pending", "completed"],
    ["running", "cancelling"],
    ["running", "completed"],
  ],
  jobs_finished: [["running", "completed"]],
  stopped: [["cancelling", "completed"]],
};

export const JOB_TRANSITIONS: Table<JobStatus, JobEvent> = {
  predecessors_succeeded: [["pending", "ready"]],
  claimed: [["ready", "running"]],
  attempt_finished: [["running", "completed"]],
  // A platform failure with budget left goes back to ready under a new dispatch generation.
  retry_scheduled: [["running", "ready"]],
  skipped: [
    ["pending", "completed"],
    ["ready", "completed"],
  ],
  cancelled: [
    ["pending", "completed"],
    ["ready", "completed"],
    ["running", "completed"],
  ],
};

export function canTransition<S extends string, E extends string>(
  table: Table<S, E>,
  event: E,
  from: S,
  to: S,
): boolean {
  return table[event].some(([f, t]) => f === from && t === to);
}

/** The statuses from which `event` may move to `to`: what a guarded update's WHERE clause lists. */
export function legalSources<S extends string, E extends string>(table: Table<S, E>, event: E, to: S): S[] {
  return table[event].filter(([, t]) => t === to).map(([f]) => f);
}

export function isRunTerminal(s: RunStatus): boolean {
  return s === "completed";
}
