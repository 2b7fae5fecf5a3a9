import type { Tx } from "@kiln/db";

/**
 * Artifact generation state changes go to the same ordered transition log as runs, jobs and
 * attempts (conventions rule 8), with entity "artifact". Written inside the changing transaction.
 */
export async function recordArtifactTransition(
  tx: Tx,
  t: {
    orgId: string;
    runId: string;
    jobId: string;
    attemptId: string;
    from: string | null;
    to: string;
    reason: string;
    data?: Record<string, unknown>;
  },
): Promise<void> {
  await tx.$executeRaw`
    INSERT INTO transition_event (org_id, run_id, job_id, attempt_id, entity, from_state, to_state, reason, data)
    VALUES (${t.orgId}::uuid, ${t.runId}::uuid, ${t.jobId}::uuid, ${t.attemptId}::uuid, 'artifact', ${t.from}, ${t.to}, ${t.reason},
            ${t.data ? JSON.stringify(t.data) : null}::jsonb)`;
}
