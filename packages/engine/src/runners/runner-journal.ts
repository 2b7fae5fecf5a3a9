import type { Tx } from "@kiln/db";
import type { RunnerState } from "@kiln/domain";

/**
 * A runner's state change in the ordered transition log, in the transaction of the change. The log
 * is per org: a platform pool's host (no org) has its changes in the audit trail only.
 */
export async function recordRunnerTransition(
  tx: Tx,
  t: {
    orgId: string | null;
    runnerId: string;
    from: RunnerState | null;
    to: RunnerState;
    reason: string;
    data?: Record<string, unknown>;
  },
): Promise<void> {
  if (!t.orgId) return;
  await tx.$executeRaw`
    INSERT INTO transition_event (org_id, entity, from_state, to_state, reason, data)
    VALUES (${t.orgId}::uuid, 'runner', ${t.from}, ${t.to}, ${t.reason},
            ${JSON.stringify({ runner_id: t.runnerId, ...t.data })}::jsonb)`;
}
