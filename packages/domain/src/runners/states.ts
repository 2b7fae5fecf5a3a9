// Runners an org owns (issue 22, ADR 0034): the values of the runner and pool columns the
// migration 0020_runners checks, and the rules that read them. Pure: times come in as arguments.

/**
 * A host's standing. online: claims; draining: finishes what it runs, claims nothing new;
 * quarantined: claims refused until an admin lifts it; offline: its heartbeats stopped;
 * revoked: its credential is dead (final).
 */
export const RUNNER_STATES = ["online", "draining", "quarantined", "offline", "revoked"] as const;
export type RunnerState = (typeof RUNNER_STATES)[number];

/** Why a host was quarantined: by an admin, or by the automatic rule and which signal tripped it. */
export const QUARANTINE_KINDS = ["manual", "platform_failures", "lease_expiries"] as const;
export type QuarantineKind = (typeof QUARANTINE_KINDS)[number];

/** platform: operators manage it; org: an org admin's pool, named `<org>/<name>`. */
export const POOL_SCOPES = ["platform", "org"] as const;
export type PoolScope = (typeof POOL_SCOPES)[number];

export function isRunnerState(s: string): s is RunnerState {
  return (RUNNER_STATES as readonly string[]).includes(s);
}

/** States a host may claim new work in. A draining host keeps heartbeating and completing. */
export function runnerMayClaim(state: RunnerState): boolean {
  return state === "online" || state === "offline";
}

/** Whether its running attempts may go on (heartbeats, completion): everything but revocation. */
export function runnerMayRun(state: RunnerState): boolean {
  return state !== "revoked";
}

/** The admin actions and which states each may start from (a guarded update uses the list). */
export const RUNNER_ACTIONS = {
  drain: { from: ["online", "offline"], to: "draining" },
  undrain: { from: ["draining"], to: "online" },
  quarantine: { from: ["online", "offline", "draining"], to: "quarantined" },
  unquarantine: { from: ["quarantined"], to: "online" },
  revoke: { from: ["online", "offline", "draining", "quarantined"], to: "revoked" },
} as const satisfies Record<string, { from: readonly RunnerState[]; to: RunnerState }>;
export type RunnerAction = keyof typeof RUNNER_ACTIONS;

/** The state a listing shows: an online or draining host without a heartbeat for a lease is offline. */
export function displayedRunnerState(
  state: RunnerState,
  lastHeartbeatAtMs: number | null,
  nowMs: number,
  offlineAfterMs: number,
): RunnerState {
  if (state !== "online") return state;
  if (lastHeartbeatAtMs === null || nowMs - lastHeartbeatAtMs > offlineAfterMs) return "offline";
  return state;
}
