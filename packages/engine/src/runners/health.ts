import type { Tx } from "@kiln/db";
import {
  AUTO_QUARANTINE,
  AUTO_QUARANTINE_ACTOR,
  CAUSES_NOT_ATTRIBUTED_TO_HOST,
  decideAutoQuarantine,
  RUNNER_ACTIONS,
  type RunnerState,
} from "@kiln/domain";
import { recordAuditEvent } from "../audit/index.ts";
import { recordRunnerTransition } from "./runner-journal.ts";

const QUARANTINABLE: readonly RunnerState[] = RUNNER_ACTIONS.quarantine.from;

/**
 * Automatic quarantine (seed 000 section 8), inside the transaction that just ended `attemptId` as a
 * platform failure (completion or lease expiry): the host's recent platform failures are counted
 * with its row locked, the domain decides, and a guarded update plus its transition and audit event
 * commit with the attempt's end. Two attempts of one host ending at once serialise on the row lock;
 * the second sees the host already quarantined and does nothing.
 */
export async function quarantineHostIfUnhealthy(tx: Tx, attemptId: string, cause: string | null): Promise<boolean> {
  if (cause !== null && CAUSES_NOT_ATTRIBUTED_TO_HOST.includes(cause)) return false;
  // Registered hosts only: their credential is one host's. An operator-made credential (`kiln
  // agent-token create`) may be shared by several agent processes on several machines, so its
  // failures say nothing about any one of them (ADR 0034 names this limit).
  const hosts = await tx.$queryRaw<{ id: string; org_id: string | null; state: RunnerState }[]>`
    SELECT h.id, h.org_id, h.state FROM attempt a JOIN agent_session s ON s.id = a.session_id JOIN runner h ON h.id = s.runner_id
    WHERE a.id = ${attemptId}::uuid AND h.registration_token_id IS NOT NULL FOR UPDATE OF h`;
  const h = hosts[0];
  if (!h || !QUARANTINABLE.includes(h.state)) return false;
  const counts = await tx.$queryRaw<{ failures: number; lease_expiries: number }[]>`
    SELECT count(*)::int AS failures, (count(*) FILTER (WHERE a.cause = 'lease.expired'))::int AS lease_expiries
    FROM agent_session s JOIN attempt a ON a.session_id = s.id
    WHERE s.runner_id = ${h.id}::uuid AND a.outcome = 'platform_failure'
      AND a.finished_at > now() - make_interval(secs => ${AUTO_QUARANTINE.windowMs / 1000}::float8)
      AND (a.cause IS NULL OR a.cause <> ALL(${CAUSES_NOT_ATTRIBUTED_TO_HOST}::text[]))`;
  const c = counts[0];
  const decision = decideAutoQuarantine({ failures: c?.failures ?? 0, leaseExpiries: c?.lease_expiries ?? 0 });
  if (!decision) return false;
  const n = await tx.$executeRaw`
    UPDATE runner SET state = 'quarantined', state_changed_at = now(), quarantine_kind = ${decision.kind},
      quarantine_reason = ${decision.reason}, quarantined_at = now(), quarantined_by = ${AUTO_QUARANTINE_ACTOR}
    WHERE id = ${h.id}::uuid AND state = ${h.state}`;
  if (n !== 1) return false;
  await recordRunnerTransition(tx, {
    orgId: h.org_id,
    runnerId: h.id,
    from: h.state,
    to: "quarantined",
    reason: decision.kind,
    data: { reason: decision.reason, attempt_id: attemptId },
  });
  await recordAuditEvent(tx, {
    orgId: h.org_id,
    kind: "runner.quarantined",
    actor: AUTO_QUARANTINE_ACTOR,
    subject: h.id,
    data: { from: h.state, to: "quarantined", kind: decision.kind, reason: decision.reason, attempt_id: attemptId },
  });
  return true;
}
