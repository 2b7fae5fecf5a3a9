import type { Tx } from "@kiln/db";

/**
 * Cache entry state changes go to the ordered transition log with entity "cache" (conventions
 * rule 8), inside the transaction that changes the state. run/job/attempt are the writer's.
 */
export async function recordCacheTransition(
  tx: Tx,
  t: {
    orgId: string;
    runId: string;
    jobId: string;
    attemptId: string;
    from: string | null;
    to: string;
    reason: string;
    data: Record<string, unknown>;
  },
): Promise<void> {
  await tx.$executeRaw`
    INSERT INTO transition_event (org_id, run_id, job_id, attempt_id, entity, from_state, to_state, reason, data)
    VALUES (${t.orgId}::uuid, ${t.runId}::uuid, ${t.jobId}::uuid, ${t.attemptId}::uuid, 'cache', ${t.from}, ${t.to}, ${t.reason},
            ${JSON.stringify(t.data)}::jsonb)`;
}
