import {
  JOB_TRANSITIONS,
  type JobStatus,
  type RunStatus,
  type dispatch,
  legalSources,
  type HostFacts,
  type IsolationClass,
  type RunnerSize,
  type TrustClass,
  type WorkflowDefinition,
  DomainError,
} from "@kiln/domain";
import type { EgressPolicy } from "../egress/index.ts";
import { statusArrayLiteral } from "../shared/status-guard.ts";
import { poolPolicyFromRow } from "./pool-policy.ts";

// The claim's guards, from the job table. Fixed at module load: the claim's statements stay
// prepared with the same text on every call (ADR 0015).
export const CLAIMABLE = legalSources(JOB_TRANSITIONS, "claimed", "running");
export const CLAIMABLE_SQL = statusArrayLiteral(CLAIMABLE);
export const CAPPED_SQL = statusArrayLiteral(legalSources(JOB_TRANSITIONS, "held_by_org_cap", "ready"));

export interface ClaimRequest {
  sessionId: string;
  /** Chosen by the agent; a retried claim with the same id returns the same ticket. */
  claimRequestId: string;
  /** A dispatch hint from the work queue, when the agent got one. */
  offer?: { jobId: string; generation: number } | null;
  /**
   * The SHA-256 of the caller's host credential. Given, the claim itself proves that the
   * credential is live and owns the session (inside its first statement); the agent protocol
   * always gives it. Omitted only by callers that authenticated the session themselves.
   */
  credentialHash?: string | null;
}

export interface JobTicket {
  runId: string;
  jobId: string;
  attemptId: string;
  orgId: string;
  epoch: number;
  jobToken: string;
  leaseExpiresAt: string;
  leaseTtlMs: number;
  heartbeatMs: number;
  trustClass: TrustClass;
  /** Mediated egress (issue 3): fixed at claim, enforced by the host's proxy. */
  egress: EgressPolicy;
  source: { cloneUrl: string; commitSha: string };
  job: {
    name: string;
    index: number;
    image: string | null;
    /** The image's manifest digest pinned at freeze time (ADR 0012); the agent pulls exactly it. */
    imageDigest: string | null;
    steps: string[];
    env: Record<string, string>;
    timeoutMinutes: number;
    /** runs_on.size (issue 20): what a microVM host sizes the sandbox to. */
    size: RunnerSize;
    artifacts: WorkflowDefinition["jobs"][number]["artifacts"];
    /** Build cache block (issue 8); the key itself is derived by the control plane at each call. */
    cache: WorkflowDefinition["jobs"][number]["cache"];
    /** Declared secret names and secrets_required (issue 16): the agent asks the broker when there are some. */
    secrets: string[];
    secretsRequired: boolean;
  };
}

export type ClaimResult =
  | { kind: "claimed"; ticket: JobTicket; replayed: boolean }
  | { kind: "none" }
  | { kind: "declined"; reason: string };

export type SessionRow = {
  id: string;
  pool: string;
  capacity: number;
  running: number;
  hostname: string;
  /** The org the session's host credential is bound to (an org-owned pool), or null. */
  token_org: string | null;
  /** The isolation class the host registered with (its sandbox driver). */
  isolation: string | null;
  /** The pool's policy row, read in the claim's first statement: null means the strict default. */
  min_isolation: IsolationClass | null;
  admits_untrusted: boolean | null;
  untrusted_on_process: boolean | null;
  owner_org_id: string | null;
  development: boolean | null;
  /** Runner labels and sizes the agent advertised (issue 20). */
  runner_labels: string[];
  sizes: RunnerSize[];
  /** Interruptible capacity (issue 22): the pool row's flag and the pool whose queue it serves. */
  interruptible: boolean | null;
  serves: string | null;
};

export function hostFacts(
  isolation: string | null,
  org: string | null,
  runner?: { labels: readonly string[]; sizes: readonly RunnerSize[] },
): HostFacts {
  // Anything but a reported microVM or an admitted lack of isolation is treated as process.
  return {
    isolation: isolation === "microvm" ? "microvm" : isolation === "none" ? "none" : "process",
    orgId: org,
    ...(runner ? { labels: runner.labels, sizes: runner.sizes } : {}),
  };
}

export function sessionPolicy(s: SessionRow) {
  return poolPolicyFromRow(
    s.pool,
    s.min_isolation === null
      ? undefined
      : {
          min_isolation: s.min_isolation,
          admits_untrusted: s.admits_untrusted ?? true,
          untrusted_on_process: s.untrusted_on_process ?? false,
          owner_org_id: s.owner_org_id,
          development: s.development ?? false,
        },
  );
}

/** Runner labels and sizes a session advertised (issue 20). */
export interface HostRunner {
  labels: string[];
  sizes: RunnerSize[];
}

/** What the claim transaction returns: everything the ticket needs, read under its locks. */
export interface Claimed {
  attemptId: string;
  runId: string;
  jobId: string;
  orgId: string;
  epoch: number;
  leaseExpiresAt: Date;
  jobIndex: number;
  name: string;
  jobDef: WorkflowDefinition["jobs"][number] | null;
  runEnv: Record<string, string> | null;
  trustClass: TrustClass;
  cloneUrl: string;
  commitSha: string;
  allowList: string[];
}

export function quarantined(reason: string | null): DomainError {
  return new DomainError(
    "RUNNER.QUARANTINED",
    `this host is quarantined (${reason ?? "no reason given"}); it claims nothing until an admin lifts it`,
  );
}

/** The candidate's run, share-locked, as the claim reads it. */
export type ClaimRun = {
  id: string;
  org_id: string;
  status: RunStatus;
  trust_class: TrustClass;
  commit_sha: string;
  clone_url: string;
};

/** The candidate job, locked (SKIP LOCKED), with what the decision and the ticket need. */
export type ClaimJobRow = {
  id: string;
  status: JobStatus;
  dispatch_generation: number;
  current_epoch: number;
  next_attempt_at: Date | null;
  ready_at: Date | null;
  now: Date;
  preds_ok: boolean;
  job_index: number;
  name: string;
  job_def: WorkflowDefinition["jobs"][number] | null;
  run_env: Record<string, string> | null;
  runner_labels: string[];
  runner_size: RunnerSize;
  tier: dispatch.Tier;
  pool: string;
  interruptible_excluded: boolean;
};
