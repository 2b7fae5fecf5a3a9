// Public API of the dispatch capability (conventions 4).
export { claimJob, type ClaimRequest, type ClaimResult, type JobTicket } from "./claim-job.ts";
export {
  longPollClaim,
  type DispatchWakeups,
} from "./long-poll-claim.ts";
export { relayOutbox, nextDeferredDelayMs, type OutboxMessage } from "./relay-outbox.ts";
export { registerSession } from "./register-session.ts";
export { loadPoolState, rankCandidates } from "./pool-snapshot.ts";
export { queueInfoForRun, type QueueInfo } from "./queue-view.ts";
export { setPoolPolicy, listPools, poolPolicyFromRow, type PoolView, type SetPoolInput } from "./pool-policy.ts";
export { placementReasonsForRun } from "./placement-view.ts";
export { invalidateDispatchViews } from "./dispatch-view.ts";
