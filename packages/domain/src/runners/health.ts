// Host health (issue 22, ADR 0034; seed 000 section 8): a host whose attempts keep ending in
// platform failures, or whose leases keep expiring, is quarantined automatically. Pure: the
// counts come from the caller's query over the window.
import { PREEMPTED_CAUSE } from "../dispatch/index.ts";
import type { QuarantineKind } from "./states.ts";

export const AUTO_QUARANTINE = {
  /** Platform failures attributed to one host within the window that quarantine it. */
  failures: 3,
  windowMs: 10 * 60_000,
} as const;

/** Who the audit trail and the runner row name for the automatic rule. */
export const AUTO_QUARANTINE_ACTOR = "system:auto-quarantine";

/**
 * Platform failures that say nothing about the host: the control plane took the capacity back
 * (preemption, a reclaim notice) or the run was cancelled. Everything else a host's attempt ends
 * with as platform_failure (lease expiry, sandbox or image trouble on it) counts against it.
 */
export const CAUSES_NOT_ATTRIBUTED_TO_HOST: readonly string[] = [PREEMPTED_CAUSE, "host.reclaimed", "run.cancelled"];

export interface HostFailureCounts {
  /** Platform failures attributed to the host within the window (lease expiries included). */
  failures: number;
  /** Of those, attempts fenced because the host stopped renewing their leases. */
  leaseExpiries: number;
}

/** Null while the host is healthy; otherwise the kind and the reason the fleet view shows. */
export function decideAutoQuarantine(c: HostFailureCounts): { kind: QuarantineKind; reason: string } | null {
  if (c.failures < AUTO_QUARANTINE.failures) return null;
  const minutes = AUTO_QUARANTINE.windowMs / 60_000;
  // Mostly silent leases: the host (or its network) is unreachable rather than failing jobs.
  if (c.leaseExpiries * 2 > c.failures)
    return {
      kind: "lease_expiries",
      reason: `${c.leaseExpiries} of ${c.failures} attempts in ${minutes} minutes were fenced because the host stopped renewing their leases`,
    };
  return {
    kind: "platform_failures",
    reason: `${c.failures} platform failures attributed to this host within ${minutes} minutes`,
  };
}
