import { DEFAULT_RETENTION_WINDOWS, type RetentionWindows } from "@kiln/domain";

// Engine knobs. Apps map their parsed env to these with config/engine-env.ts (one schema for web and
// workers) and pass them in; nothing here reads process.env.
export interface EngineConfig {
  /** Lease TTL for an attempt; the agent's local watchdog destroys the sandbox at the same bound. */
  leaseTtlMs: number;
  /** How often agents are told to heartbeat (a fraction of the TTL). */
  heartbeatMs: number;
  /** Automatic retries after platform failures, per job, counted in the database. */
  retryBudget: number;
  backoffBaseMs: number;
  backoffMaxMs: number;
  /** A READY job whose dispatch hint has been out this long is dispatched again (hints get lost). */
  redispatchAfterMs: number;
  /** A run still waiting to be frozen this long gets its freeze request re-sent. */
  refreezeAfterMs: number;
  /** Candidate order for claims: weighted fair queuing (default) or plain FIFO (benchmark baseline). */
  dispatchPolicy: "fair" | "fifo";
  /** How long one process's ranking of a pool's queue serves claims before it is reloaded (fair policy). */
  dispatchViewMs: number;
  /**
   * Issue 18 (ADR 0033): how far a host's clock may drift from the database's over one lease. A
   * silent deploy attempt is provably dead only at lease expiry + this (T_kill, seed 003 Q7).
   */
  clockSkewBoundMs: number;
  /**
   * Platform retention windows (KILN_RETENTION_WINDOWS, issue 21): a run's metadata class and
   * expiry are written from these in the transaction that completes it (docs/adr/0036).
   */
  retention: RetentionWindows;
}

export const DEFAULT_ENGINE_CONFIG: EngineConfig = {
  leaseTtlMs: 30_000,
  heartbeatMs: 10_000,
  retryBudget: 2,
  backoffBaseMs: 1_000,
  backoffMaxMs: 60_000,
  redispatchAfterMs: 15_000,
  refreezeAfterMs: 30_000,
  dispatchPolicy: "fair",
  dispatchViewMs: 200,
  clockSkewBoundMs: 5_000,
  // What an unset KILN_RETENTION_WINDOWS parses to.
  retention: DEFAULT_RETENTION_WINDOWS,
};
