import type { Tx } from "@kiln/db";

// The ordered transition log and the transactional outbox. Both are written only inside the
// transaction that makes the state change they describe (conventions rule 8).

export interface TransitionRecord {
  orgId: string;
  runId?: string | null;
  jobId?: string | null;
  attemptId?: string | null;
  /** environment and promotion (issue 18) carry their ids in `data`; run_id stays null. */
  entity: "run" | "job" | "attempt" | "environment" | "promotion" | "deployment";
  from: string | null;
  to: string;
  reason: string;
  data?: Record<string, unknown> | null;
}

export async function recordTransition(tx: Tx, t: TransitionRecord): Promise<void> {
  const data = t.data ? JSON.stringify(t.data) : null;
  if (!t.runId || !isForgeVisible(t)) {
    await tx.$executeRaw`
      INSERT INTO transition_event (org_id, run_id, job_id, attempt_id, entity, from_state, to_state, reason, data)
      VALUES (${t.orgId}::uuid, ${t.runId ?? null}::uuid, ${t.jobId ?? null}::uuid, ${t.attemptId ?? null}::uuid,
              ${t.entity}, ${t.from}, ${t.to}, ${t.reason}, ${data}::jsonb)`;
    return;
  }
  // A change the forge shows (ADR 0028): the same statement queues a forge.status message, only for
  // repos with a forge credential, so installations without one pay one primary-key probe.
  await tx.$executeRaw`
    WITH ev AS (
      INSERT INTO transition_event (org_id, run_id, job_id, attempt_id, entity, from_state, to_state, reason, data)
      VALUES (${t.orgId}::uuid, ${t.runId}::uuid, ${t.jobId ?? null}::uuid, ${t.attemptId ?? null}::uuid,
              ${t.entity}, ${t.from}, ${t.to}, ${t.reason}, ${data}::jsonb)
      RETURNING run_id),
    o AS (
      INSERT INTO outbox (topic, payload, dedupe_key)
      SELECT 'forge.status', jsonb_build_object('runId', r.id), r.id::text
      FROM ev JOIN workflow_run r ON r.id = ev.run_id JOIN repo_forge f ON f.repo_id = r.repo_id
      WHERE f.token_enc IS NOT NULL OR f.installation_id IS NOT NULL
      RETURNING id)
    SELECT pg_notify('kiln_outbox', 'forge.status') FROM o`;
}

/**
 * Transitions that change what the forge shows: a run admitted (pending), frozen (its jobs appear
 * as pending contexts) or completed, and a job completed.
 */
function isForgeVisible(t: TransitionRecord): boolean {
  if (t.entity === "run") return t.from === null || t.to === "running" || t.to === "completed";
  return t.entity === "job" && t.to === "completed";
}

export type OutboxTopic =
  | "run.freeze"
  | "job.dispatch"
  | "attestation.create"
  | "attestation.verify"
  | "forge.status"
  | "environment.pointer_moved";

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
/** forge.status: "run X changed"; the delivery reads the current state itself (ADR 0028). */
export interface ForgeStatusPayload {
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
/**
 * An environment's pointer moved (issue 18): the deployer starts the environment's deploy run for
 * exactly this generation. pointerSeq orders moves of one environment: a consumer that sees an
 * older seq than the environment's current one knows it was superseded.
 */
export interface EnvironmentPointerMovedPayload {
  orgId: string;
  repoId: string;
  environmentId: string;
  promotionId: string;
  kind: "promote" | "rollback";
  generationId: string;
  digest: string;
  attestationId: string | null;
  pointerSeq: string;
}
export type OutboxPayload =
  | EnvironmentPointerMovedPayload
  | DispatchPayload
  | FreezePayload
  | AttestPayload
  | VerifyAttestationPayload
  | ForgeStatusPayload;

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
