import { withTx, type Db } from "@kiln/db";
import {
  CAUSES_NOT_ATTRIBUTED_TO_HOST,
  displayedRunnerState,
  DomainError,
  RUNNER_ACTIONS,
  type QuarantineKind,
  type RunnerAction,
  type RunnerState,
} from "@kiln/domain";
import { recordAuditEvent } from "../audit/index.ts";
import { recordRunnerTransition } from "./runner-journal.ts";

// The fleet's hosts (issue 22, ADR 0034): listed for an org's admins (their own hosts only, the org
// is in the query) and for operators (orgId null: every host), and the admin actions on one.

export interface RunnerView {
  id: string;
  name: string;
  org: string | null;
  pool: string;
  labels: string[];
  isolation: "process" | "microvm" | null;
  /** As shown: an online host without a heartbeat for a lease reads offline. */
  state: RunnerState;
  quarantine: { kind: QuarantineKind; reason: string; at: string; by: string } | null;
  protocolVersion: number | null;
  agentVersion: string | null;
  lastHeartbeatAt: string | null;
  slots: { inUse: number; total: number };
  /** Platform failures attributed to the host in the last hour. */
  platformFailuresLastHour: number;
  createdAt: string;
}

type Row = {
  id: string;
  name: string;
  org: string | null;
  org_id: string | null;
  pool: string;
  labels: string[];
  isolation: "process" | "microvm" | null;
  state: RunnerState;
  quarantine_kind: QuarantineKind | null;
  quarantine_reason: string | null;
  quarantined_at: Date | null;
  quarantined_by: string | null;
  protocol_version: number | null;
  agent_version: string | null;
  heartbeat: Date | null;
  total: number | null;
  in_use: number;
  failures: number;
  created_at: Date;
  now: Date;
};

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function view(r: Row, offlineAfterMs: number): RunnerView {
  return {
    id: r.id,
    name: r.name,
    org: r.org,
    pool: r.pool,
    labels: r.labels,
    isolation: r.isolation,
    state: displayedRunnerState(r.state, r.heartbeat?.getTime() ?? null, r.now.getTime(), offlineAfterMs),
    quarantine:
      r.state === "quarantined" && r.quarantine_kind && r.quarantine_reason && r.quarantined_at && r.quarantined_by
        ? {
            kind: r.quarantine_kind,
            reason: r.quarantine_reason,
            at: r.quarantined_at.toISOString(),
            by: r.quarantined_by,
          }
        : null,
    protocolVersion: r.protocol_version,
    agentVersion: r.agent_version,
    lastHeartbeatAt: r.heartbeat?.toISOString() ?? null,
    slots: { inUse: r.in_use, total: r.total ?? 0 },
    platformFailuresLastHour: r.failures,
    createdAt: r.created_at.toISOString(),
  };
}

/**
 * The last heartbeat is the latest sign of life of any of its sessions: a claim (every long-poll
 * touches the session) or a lease renewal of a running attempt (lease end minus one TTL).
 */
async function selectRunners(db: Db, where: { orgId: string | null; runnerId: string | null }, leaseTtlMs: number) {
  return db.$queryRaw<Row[]>`
    SELECT h.id, h.name, o.slug AS org, h.org_id, h.pool, h.labels, h.isolation, h.state, h.quarantine_kind,
           h.quarantine_reason, h.quarantined_at, h.quarantined_by, h.protocol_version, h.agent_version, h.created_at,
           now() AS now,
           GREATEST(h.last_heartbeat_at,
                    (SELECT max(s.last_seen_at) FROM agent_session s WHERE s.runner_id = h.id),
                    (SELECT max(a.lease_expires_at) - make_interval(secs => ${leaseTtlMs / 1000}::float8)
                       FROM attempt a JOIN agent_session s ON s.id = a.session_id
                       WHERE s.runner_id = h.id AND a.status = 'running')) AS heartbeat,
           (SELECT s.capacity FROM agent_session s WHERE s.runner_id = h.id AND s.ended_at IS NULL
              ORDER BY s.created_at DESC LIMIT 1) AS total,
           (SELECT count(*)::int FROM attempt a JOIN agent_session s ON s.id = a.session_id
              WHERE s.runner_id = h.id AND a.status = 'running') AS in_use,
           (SELECT count(*)::int FROM attempt a JOIN agent_session s ON s.id = a.session_id
              WHERE s.runner_id = h.id AND a.outcome = 'platform_failure' AND a.finished_at > now() - interval '1 hour'
                AND (a.cause IS NULL OR a.cause <> ALL(${CAUSES_NOT_ATTRIBUTED_TO_HOST}::text[]))) AS failures
    FROM runner h LEFT JOIN org o ON o.id = h.org_id
    WHERE (${where.orgId}::uuid IS NULL OR h.org_id = ${where.orgId}::uuid)
      AND (${where.runnerId}::uuid IS NULL OR h.id = ${where.runnerId}::uuid)
    ORDER BY h.created_at DESC, h.id LIMIT 1000`;
}

/** An org's hosts (`orgId`), or every host (null: operators). */
export async function listRunners(db: Db, input: { orgId: string | null; leaseTtlMs: number }): Promise<RunnerView[]> {
  const rows = await selectRunners(db, { orgId: input.orgId, runnerId: null }, input.leaseTtlMs);
  return rows.map((r) => view(r, input.leaseTtlMs));
}

export interface RunnerActionInput {
  /** The caller's org: another org's runner is RUNNER.NOT_FOUND, exactly like a missing one. Null: operators. */
  orgId: string | null;
  runnerId: string;
  action: RunnerAction;
  /** Required for quarantine: shown in the fleet view. */
  reason?: string;
  actor: string;
  leaseTtlMs: number;
}

/**
 * One guarded update from the action's allowed states (packages/domain RUNNER_ACTIONS), its
 * transition and its audit event in one transaction. Asking for the state the host is already in
 * changes nothing and records nothing. Revocation also revokes the credential and ends the
 * host's sessions: its next claim and every heartbeat of its running attempts are refused, so their
 * leases lapse and the reconciler fences them and retries them elsewhere, within one lease.
 */
export async function applyRunnerAction(db: Db, input: RunnerActionInput): Promise<RunnerView> {
  if (!UUID.test(input.runnerId)) throw new DomainError("RUNNER.NOT_FOUND", "no such runner");
  const rule = RUNNER_ACTIONS[input.action];
  const reason = input.reason?.trim() ?? "";
  if (input.action === "quarantine" && (reason.length === 0 || reason.length > 500))
    throw new DomainError("REQUEST.INVALID", "quarantine needs a reason of 1-500 characters");
  await withTx(db, "runner-action", async (tx) => {
    const cur = await tx.$queryRaw<{ state: RunnerState; org_id: string | null; agent_token_id: string }[]>`
      SELECT state, org_id, agent_token_id FROM runner
      WHERE id = ${input.runnerId}::uuid AND (${input.orgId}::uuid IS NULL OR org_id = ${input.orgId}::uuid) FOR UPDATE`;
    const h = cur[0];
    if (!h) throw new DomainError("RUNNER.NOT_FOUND", "no such runner");
    if (h.state === rule.to) return;
    if (!(rule.from as readonly RunnerState[]).includes(h.state))
      throw new DomainError("RUNNER.ILLEGAL_TRANSITION", `a ${h.state} runner cannot be ${pastTense(input.action)}`);
    const n = await tx.$executeRaw`
      UPDATE runner SET state = ${rule.to}, state_changed_at = now(),
        quarantine_kind = CASE WHEN ${rule.to} = 'quarantined' THEN 'manual' ELSE NULL END,
        quarantine_reason = CASE WHEN ${rule.to} = 'quarantined' THEN ${reason} ELSE NULL END,
        quarantined_at = CASE WHEN ${rule.to} = 'quarantined' THEN now() ELSE NULL END,
        quarantined_by = CASE WHEN ${rule.to} = 'quarantined' THEN ${input.actor} ELSE NULL END,
        revoked_at = CASE WHEN ${rule.to} = 'revoked' THEN now() ELSE revoked_at END,
        revoked_by = CASE WHEN ${rule.to} = 'revoked' THEN ${input.actor} ELSE revoked_by END
      WHERE id = ${input.runnerId}::uuid AND state = ${h.state}`;
    if (n !== 1) throw new Error("guarded runner update lost a race it should have been locked against");
    if (rule.to === "revoked") {
      await tx.$executeRaw`UPDATE agent_token SET revoked_at = COALESCE(revoked_at, now()) WHERE id = ${h.agent_token_id}::uuid`;
      await tx.$executeRaw`UPDATE agent_session SET ended_at = now() WHERE runner_id = ${input.runnerId}::uuid AND ended_at IS NULL`;
    }
    await recordRunnerTransition(tx, {
      orgId: h.org_id,
      runnerId: input.runnerId,
      from: h.state,
      to: rule.to,
      reason: input.action,
      ...(reason ? { data: { reason } } : {}),
    });
    await recordAuditEvent(tx, {
      orgId: h.org_id,
      kind: `runner.${pastTense(input.action)}`,
      actor: input.actor,
      subject: input.runnerId,
      data: { from: h.state, to: rule.to, ...(reason ? { reason } : {}) },
    });
  });
  const rows = await selectRunners(db, { orgId: input.orgId, runnerId: input.runnerId }, input.leaseTtlMs);
  const r = rows[0];
  if (!r) throw new DomainError("RUNNER.NOT_FOUND", "no such runner");
  return view(r, input.leaseTtlMs);
}

function pastTense(a: RunnerAction): string {
  switch (a) {
    case "drain":
      return "drained";
    case "undrain":
      return "undrained";
    case "quarantine":
      return "quarantined";
    case "unquarantine":
      return "unquarantined";
    case "revoke":
      return "revoked";
  }
}
