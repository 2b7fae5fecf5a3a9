import type { Tx } from "@kiln/db";
import { parseOutboxMessage, type OutboxPayloadOf, type OutboxTopic } from "./outbox-topics.ts";

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
  const topic: OutboxTopic = "forge.status";
  await tx.$executeRaw`
    WITH ev AS (
      INSERT INTO transition_event (org_id, run_id, job_id, attempt_id, entity, from_state, to_state, reason, data)
      VALUES (${t.orgId}::uuid, ${t.runId}::uuid, ${t.jobId ?? null}::uuid, ${t.attemptId ?? null}::uuid,
              ${t.entity}, ${t.from}, ${t.to}, ${t.reason}, ${data}::jsonb)
      RETURNING run_id),
    o AS (
      INSERT INTO outbox (topic, payload, dedupe_key)
      SELECT ${topic}::text, jsonb_build_object('runId', r.id), r.id::text
      FROM ev JOIN workflow_run r ON r.id = ev.run_id JOIN repo_forge f ON f.repo_id = r.repo_id
      WHERE f.token_enc IS NOT NULL OR f.installation_id IS NOT NULL
      RETURNING id)
    SELECT pg_notify('kiln_outbox', ${topic}::text) FROM o`;
}

/**
 * Transitions that change what the forge shows: a run admitted (pending), frozen (its jobs appear
 * as pending contexts) or completed, and a job completed.
 */
function isForgeVisible(t: TransitionRecord): boolean {
  if (t.entity === "run") return t.from === null || t.to === "running" || t.to === "completed";
  return t.entity === "job" && t.to === "completed";
}

/**
 * Queues one message. The payload is checked against its topic's schema here (ADR 0038): a bad one
 * fails the producing transaction instead of being retried by a consumer that can never parse it.
 */
export async function enqueueOutbox<T extends OutboxTopic>(
  tx: Tx,
  topic: T,
  payload: OutboxPayloadOf<T>,
  opts: { deliverAfter?: Date | null; dedupeKey?: string } = {},
): Promise<void> {
  parseOutboxMessage(topic, payload);
  await tx.$executeRaw`
    INSERT INTO outbox (topic, payload, dedupe_key, deliver_after)
    VALUES (${topic}, ${JSON.stringify(payload)}::jsonb, ${opts.dedupeKey ?? null}, COALESCE(${opts.deliverAfter ?? null}::timestamptz, now()))`;
  // Wakes the relay on commit (NOTIFY is transactional); a lost notification costs one poll interval.
  await tx.$executeRaw`SELECT pg_notify('kiln_outbox', ${topic})`;
}
