// Evicting one item's metadata: lock its row, decide again from the same loader the plan used (a
// hold or a pointer may have arrived since), mark it expired, and write the event-log and audit
// records in the same transaction. Object deletion comes after, in sweep-objects.ts, so bytes are
// only ever deleted for rows that committed as expired (docs/adr/0036).
import type { Tx } from "@kiln/db";
import { assertNever, decideEviction, type EvictionKind, type RetentionPlanEntry } from "@kiln/domain";
import { recordAuditEvent } from "../audit/index.ts";
import { recordArtifactTransition } from "../artifacts/index.ts";
import { recordTransition } from "../shared/journal.ts";
import { loadCandidates } from "./retention-candidates.ts";

const RETENTION_ACTOR = "system:retention";

const LOCK: Record<EvictionKind, string> = {
  artifact:
    "SELECT run_id::text, job_id::text, attempt_id::text, name FROM artifact_generation WHERE id = $1::uuid FOR UPDATE",
  log: "SELECT run_id::text, job_id::text, attempt_id::text, NULL AS name FROM log_attempt WHERE attempt_id = $1::uuid FOR UPDATE",
  run_metadata:
    "SELECT id::text AS run_id, NULL AS job_id, NULL AS attempt_id, NULL AS name FROM workflow_run WHERE id = $1::uuid FOR UPDATE",
};

interface Locked {
  run_id: string;
  job_id: string | null;
  attempt_id: string | null;
  name: string | null;
}

/** Returns the audit entry written, or null when the item is no longer evictable. */
export async function evictItem(tx: Tx, kind: EvictionKind, id: string, at: Date): Promise<RetentionPlanEntry | null> {
  const locked = (await tx.$queryRawUnsafe<Locked[]>(LOCK[kind], id))[0];
  if (!locked) return null;
  const c = (await loadCandidates(tx, kind, { at, id, limit: 1 }))[0];
  if (!c) return null; // already expired, or not expired after all
  const d = decideEviction(c, at);
  if (d.action !== "evict") return null;
  const entry: RetentionPlanEntry = {
    kind,
    id,
    org_id: c.orgId,
    class: c.class,
    expires_at: c.expiresAt.toISOString(),
    reason: d.reason,
  };
  const facts = { ...entry, evicted_at: at.toISOString() };
  switch (kind) {
    case "artifact":
      await tx.$executeRawUnsafe(
        "UPDATE artifact_generation SET expired_at = $2 WHERE id = $1::uuid AND expired_at IS NULL",
        id,
        at,
      );
      await tx.$executeRawUnsafe(
        "UPDATE artifact_binding SET expired_at = $2 WHERE generation_id = $1::uuid AND expired_at IS NULL",
        id,
        at,
      );
      await recordArtifactTransition(tx, {
        orgId: c.orgId,
        runId: locked.run_id,
        jobId: locked.job_id ?? "",
        attemptId: locked.attempt_id ?? "",
        from: "sealed",
        to: "expired",
        reason: "retention.expired",
        data: { generation_id: id, name: locked.name, ...facts },
      });
      break;
    case "log":
      await tx.$executeRawUnsafe(
        "UPDATE log_attempt SET expired_at = $2 WHERE attempt_id = $1::uuid AND expired_at IS NULL",
        id,
        at,
      );
      await tx.$executeRawUnsafe(
        `INSERT INTO transition_event (org_id, run_id, job_id, attempt_id, entity, from_state, to_state, reason, data)
         VALUES ($1::uuid, $2::uuid, $3::uuid, $4::uuid, 'log', NULL, 'expired', 'retention.expired', $5::jsonb)`,
        c.orgId,
        locked.run_id,
        locked.job_id,
        locked.attempt_id,
        JSON.stringify(facts),
      );
      break;
    case "run_metadata":
      // The run's row stays (attestations and the audit trail, kept 7 years, name it); what it
      // carried beyond identity and outcome goes: its definition, inputs and egress record.
      await tx.$executeRawUnsafe(
        `UPDATE workflow_run SET expired_at = $2, definition = NULL, inputs = '{}'::jsonb
         WHERE id = $1::uuid AND expired_at IS NULL`,
        id,
        at,
      );
      await tx.$executeRawUnsafe("DELETE FROM egress_event WHERE run_id = $1::uuid", id);
      await recordTransition(tx, {
        orgId: c.orgId,
        runId: id,
        entity: "run",
        from: "completed",
        to: "expired",
        reason: "retention.expired",
        data: facts,
      });
      break;
    default:
      assertNever(kind, "eviction kind");
  }
  await recordAuditEvent(tx, {
    orgId: c.orgId,
    kind: "retention.evicted",
    actor: RETENTION_ACTOR,
    subject: `${kind}:${id}`,
    data: facts,
  });
  return entry;
}
