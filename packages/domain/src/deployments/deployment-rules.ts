import { reservedEnvNameProblem } from "../shared/env-names.ts";
// Deploy runs and the deployment lock (issue 18, docs/adr/0033-deploy-runs-and-deployment-locks.md).
// Pure: what the lock sweeper and the deploy starter decide from rows they loaded. Time comes in.

/** A deployment: one per pointer move of an environment that has a deploy workflow. */
export const DEPLOYMENT_STATES = ["waiting", "running", "succeeded", "failed", "superseded"] as const;
export type DeploymentState = (typeof DEPLOYMENT_STATES)[number];

/** Why a deployment lock was released. */
export const LOCK_RELEASE_REASONS = [
  // Every attempt of the deploy run ended with the agent's word that its sandbox was destroyed.
  "attempts_stopped",
  // An attempt went silent; lease TTL + the clock-skew bound passed since its last renewal.
  "kill_bound_elapsed",
  // An org admin released it (a host Kiln does not control: no proof of death exists).
  "manual",
] as const;
export type LockReleaseReason = (typeof LOCK_RELEASE_REASONS)[number];

/** Run trigger of a deploy run: never retried automatically, OIDC sub names the environment. */
export const DEPLOY_TRIGGER = "deploy";

/** Environment variable names: the step-env rule, and never Kiln's own namespace. */
export const ENV_VARIABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,99}$/;
export const MAX_ENV_VARIABLES = 100;
export const MAX_ENV_VARIABLE_BYTES = 4096;

export function envVariableNameProblem(name: string): string | null {
  if (!ENV_VARIABLE_NAME.test(name)) return "must be a letter or _ then letters, digits or _ (at most 100)";
  if (/^KILN_/i.test(name)) return "must not start with KILN_ (Kiln's own variables)";
  return reservedEnvNameProblem(name);
}

/** One attempt of the deploy run as the sweeper loaded it. */
export interface DeployAttemptFacts {
  status: "running" | "completed";
  /** Ended through a completion report whose sandbox_destroyed was true. */
  stoppedByAgent: boolean;
  /** The lease deadline after the last renewal (renewal time + lease TTL), database time. */
  leaseExpiresAtMs: number;
  /** The host belongs to Kiln (its supervisor enforces the watchdog); false for an org-owned pool. */
  hostControlled: boolean;
}

export type LockDecision =
  | { kind: "hold"; why: "run_active" }
  /** The old attempt may still be alive; provably dead at `atMs` (the kill bound). */
  | { kind: "hold_until"; atMs: number; why: "kill_bound_pending" }
  /** No proof of death can exist: an admin must release, and the dashboard says why. */
  | { kind: "manual"; why: "host_not_controlled" }
  | { kind: "release"; reason: Exclude<LockReleaseReason, "manual"> };

/**
 * When the environment's lock may go (seed 003 Q1 and Q7). While the deploy run is not finished the
 * lock is held. Once finished: an attempt the agent reported stopped is dead; a silent one is dead
 * only after T_kill = its last renewal + lease TTL + the clock-skew bound, which is when the host's
 * watchdog has destroyed its sandbox on its own clock. On a host Kiln does not control nobody
 * enforces that, so the release is manual. A timeout is never taken as proof on such a host.
 */
export function decideLockRelease(s: {
  runFinished: boolean;
  attempts: readonly DeployAttemptFacts[];
  nowMs: number;
  clockSkewBoundMs: number;
}): LockDecision {
  if (!s.runFinished || s.attempts.some((a) => a.status === "running")) return { kind: "hold", why: "run_active" };
  const silent = s.attempts.filter((a) => !a.stoppedByAgent);
  if (silent.length === 0) return { kind: "release", reason: "attempts_stopped" };
  if (silent.some((a) => !a.hostControlled)) return { kind: "manual", why: "host_not_controlled" };
  const atMs = Math.max(...silent.map((a) => a.leaseExpiresAtMs)) + s.clockSkewBoundMs;
  return s.nowMs >= atMs
    ? { kind: "release", reason: "kill_bound_elapsed" }
    : { kind: "hold_until", atMs, why: "kill_bound_pending" };
}

/** The deployment's end state from the deploy run's outcome. */
export function deploymentStateOf(runOutcome: string | null): DeploymentState {
  return runOutcome === "success" ? "succeeded" : "failed";
}

/** Where the promoted artifact is placed in a deploy job's workspace unless configured. */
export function defaultArtifactPath(artifactName: string): string {
  return `.kiln/promoted/${artifactName}`;
}
