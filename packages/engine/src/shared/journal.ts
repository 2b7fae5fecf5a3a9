import type { Tx } from "@kiln/db";

// The ordered transition log and the transactional outbox. Both are written only inside the
// transaction that makes the state change they describe (conventions rule 8).

export interface TransitionRecord {
  orgId: string;
  runId?: string | null;
  jobId?: string | null;
  attemptId?: string | null;
  entity: "run" | "job" | "attempt";
  from: string | null;
  to: string;
  reason: string;
  data?: Record<string, unknown> | null;
}

export async function recordTransition(tx: Tx, t: TransitionRecord): Promise<void> {
  await tx.$executeRaw`
    INSERT INTO transition_event (org_id, run_id, job_id, attempt_id, entity, from_state, to_state, reason, data)
    VALUES (${t.orgId}::uuid, ${t.runId ?? null}::uuid, ${t.jobId ?? null}::uuid, ${t.attemptId ?? null}::uuid,
            ${t.entity}, ${t.from}, ${t.to}, ${t.reason}, ${t.data ? JSON.stringify(t.data) : null}::jsonb)`;
}

export type OutboxTopic = "run.freeze" | "job.dispatch" | "attestation.create" | "attestation.verify";

export interface DispatchPayload {
  jobId: string;
  runId: string;
  orgId: string;
  pool: string;
  generation: number;
}
export interface FreezePayload {
  runId: string;
}
/** A successful job bound artifacts: the attestor signs its provenance (issue 17). */
export interface AttestPayload {
  jobId: string;
  runId: string;
  orgId: string;
  epoch: number;
}
/** A new attestation: the verifier re-checks it against the log and the stored bytes. */
export interface VerifyAttestationPayload {
  attestationId: string;
}
export type OutboxPayload = DispatchPayload | FreezePayload | AttestPayload | VerifyAttestationPayload;

export async function enqueueOutbox(
  tx: Tx,
  topic: OutboxTopic,
  payload: OutboxPayload,
  opts: { deliverAfter?: Date | null; dedupeKey?: string } = {},
): Promise<void> {
  await tx.$executeRaw`
    INSERT INTO outbox (topic, payload, dedupe_key, deliver_after)
    VALUES (${topic}, ${JSON.stringify(payload)}::jsonb, ${opts.dedupeKey ?? null}, COALESCE(${opts.deliverAfter ?? null}::timestamptz, now()))`;
  // Wakes the relay on commit (NOTIFY is transactional); a lost notification costs one poll interval.
  await tx.$executeRaw`SELECT pg_notify('kiln_outbox', ${topic})`;
}
