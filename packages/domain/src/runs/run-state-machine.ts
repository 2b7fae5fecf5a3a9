// Run, job and attempt lifecycles as transition tables. The database applies them as guarded
// conditional updates (`UPDATE ... WHERE status = ANY(<legalSources(table, event, to)>)`): every
// status guard in packages/engine takes its source states from here, so these tables are the single
// list of what is legal. Self-loops (`["ready", "ready"]`) are writes that keep the status but are
// only legal in it (a redispatch hint, a stop request, a lease renewal).
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
  | "held_by_org_cap"
  | "redispatched"
  | "attempt_finished"
  | "retry_scheduled"
  | "skipped"
  | "cancelled";
export type AttemptEvent = "lease_renewed" | "stop_requested" | "preempt_requested" | "ended";

type Table<S extends string, E extends string> = Readonly<Record<E, readonly (readonly [S, S])[]>>;

export const RUN_TRANSITIONS: Table<RunStatus, RunEvent> = {
  frozen: [["pending", "running"]],
  freeze_failed: [["pending", "completed"]],
  // A pending run has nothing to stop and ends at once. A running one waits, cancelling, for every
  // attempt to be confirmed stopped; with nothing live it is `stopped` in the same transaction.
  cancel_requested: [
    ["pending", "completed"],
    ["running", "cancelling"],
  ],
  jobs_finished: [["running", "completed"]],
  stopped: [["cancelling", "completed"]],
};

export const JOB_TRANSITIONS: Table<JobStatus, JobEvent> = {
  predecessors_succeeded: [["pending", "ready"]],
  claimed: [["ready", "running"]],
  // A claim over the org's hard cap leaves the job READY with the reason recorded for the queue view.
  held_by_org_cap: [["ready", "ready"]],
  // A READY job whose dispatch hint went out long ago gets a fresh one.
  redispatched: [["ready", "ready"]],
  attempt_finished: [["running", "completed"]],
  // A platform failure with budget left goes back to ready under a new dispatch generation.
  retry_scheduled: [["running", "ready"]],
  skipped: [
    ["pending", "completed"],
    ["ready", "completed"],
  ],
  // Cancel ends only the jobs nothing executes yet; a running job ends when its attempt is confirmed
  // stopped (attempt_finished with outcome cancelled), so the run stays cancelling until then.
  cancelled: [
    ["pending", "completed"],
    ["ready", "completed"],
  ],
};

/** An attempt is created running by the claim and ends once; in between only its flags change. */
export const ATTEMPT_TRANSITIONS: Table<AttemptStatus, AttemptEvent> = {
  lease_renewed: [["running", "running"]],
  // Cancel asks every live attempt of the run to stop; the heartbeat answer carries it.
  stop_requested: [["running", "running"]],
  // Lent capacity going back to its owner (the reconciler's preemption).
  preempt_requested: [["running", "running"]],
  ended: [["running", "completed"]],
};

/**
 * The statuses from which `event` may move to `to`: what a guarded update's WHERE clause lists.
 * Throws for a pair the table does not have, so a guard can never silently match nothing.
 */
export function legalSources<S extends string, E extends string>(table: Table<S, E>, event: E, to: S): S[] {
  const sources = table[event].filter(([, t]) => t === to).map(([f]) => f);
  if (sources.length === 0) throw new Error(`no transition ${String(event)} -> ${to} in this table`);
  return sources;
}

export function isRunTerminal(s: RunStatus): boolean {
  return s === "completed";
}
