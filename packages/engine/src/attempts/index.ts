// Public API of the attempts capability (conventions 4).
export { lockCurrentAttempt, type JobClaims } from "./current-attempt.ts";
export type { AttemptView } from "./load-attempt.ts";
export { heartbeat, type HeartbeatResult } from "./heartbeat.ts";
export { completeAttempt, type CompletionReport, type CompletionResult } from "./complete-attempt.ts";
export { reconcile, type ReconcileReport } from "./reconcile.ts";
