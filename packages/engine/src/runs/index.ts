// Public API of the runs capability (conventions 4).
export { admitManualRun, manualTriggerBody, type Caller, type ManualTriggerBody } from "./admit-manual.ts";
export { freezeRun, createJobs, DEFAULT_POOL, type FreezeOutcome } from "./freeze-run.ts";
export { cancelRun } from "./cancel-run.ts";
export { retryRun } from "./retry-run.ts";
export { rerunFailedJobs, type RerunResult } from "./rerun-failed.ts";
export { getRun, type RunView, type JobView } from "./get-run.ts";
// The run lock and run advancement, taken by attempt completion, reconcile and the attempt fence.
export { advanceRun, finishRunIfDone, lockRun, makeJobsReady, retryBudgetOf } from "./advance-run.ts";
export { cancelPullRequestRuns, cancelSupersededRuns } from "./cancel-pull-request-runs.ts";
export { listFlakyJobs, type FlakyJob } from "./flaky-jobs.ts";
export { rerunFailedJobsAsOperator, listFlakyJobsOfRepo } from "./operator-runs.ts";
