import { withTx, type Db, type Tx } from "@kiln/db";
import { DomainError, type RunnerState } from "@kiln/domain";
import { recordAuditEvent } from "../audit/index.ts";

// Host credentials (`kiln agent-token list|revoke`). Revocation takes effect without any push to
// the host: its next claim is refused (AUTH.CREDENTIAL_REVOKED, the agent exits), its running
// attempts' heartbeats are refused (ATTEMPT.HOST_REVOKED, the agent destroys the sandboxes), and
// their leases then lapse, so the reconciler fences them as platform failures within one lease.

export interface AgentTokenView {
  id: string;
  name: string;
  pool: string;
  /** The org the credential is bound to, or null for a shared pool. */
  org: string | null;
  createdAt: string;
  revokedAt: string | null;
  /** The latest claim or registration of any of its sessions (updated by every claim already). */
  lastSeenAt: string | null;
  sessions: number;
}

type Row = {
  id: string;
  name: string;
  pool: string;
  org: string | null;
  created_at: Date;
  revoked_at: Date | null;
  last_seen_at: Date | null;
  sessions: number;
};

function view(r: Row): AgentTokenView {
  return {
    id: r.id,
    name: r.name,
    pool: r.pool,
    org: r.org,
    createdAt: r.created_at.toISOString(),
    revokedAt: r.revoked_at?.toISOString() ?? null,
    lastSeenAt: r.last_seen_at?.toISOString() ?? null,
    sessions: r.sessions,
  };
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export async function listAgentTokens(db: Db): Promise<AgentTokenView[]> {
  const rows = await db.$queryRaw<Row[]>`
    SELECT t.id, t.name, t.pool, o.slug AS org, t.created_at, t.revoked_at,
           (SELECT max(s.last_seen_at) FROM agent_session s WHERE s.agent_token_id = t.id) AS last_seen_at,
           (SELECT count(*)::int FROM agent_session s WHERE s.agent_token_id = t.id) AS sessions
    FROM agent_token t LEFT JOIN org o ON o.id = t.org_id
    ORDER BY t.created_at DESC, t.id LIMIT 1000`;
  return rows.map(view);
}

/**
 * Idempotent: a second revocation keeps the first time. The credential's host reads revoked in the
 * fleet view too and its sessions are over (issue 22), in the same transaction, audited.
 */
export async function revokeAgentToken(db: Db, input: { id: string; actor?: string }): Promise<AgentTokenView> {
  if (!UUID.test(input.id)) throw new DomainError("TOKEN.NOT_FOUND", "no host credential with that id");
  const actor = input.actor ?? "cli:agent-token revoke";
  return withTx(db, "revoke-agent-token", async (tx) => {
    const rows = await tx.$queryRaw<Row[]>`
      WITH t AS (UPDATE agent_token SET revoked_at = COALESCE(revoked_at, now()) WHERE id = ${input.id}::uuid RETURNING *)
      SELECT t.id, t.name, t.pool, o.slug AS org, t.created_at, t.revoked_at,
             (SELECT max(s.last_seen_at) FROM agent_session s WHERE s.agent_token_id = t.id) AS last_seen_at,
             (SELECT count(*)::int FROM agent_session s WHERE s.agent_token_id = t.id) AS sessions
      FROM t LEFT JOIN org o ON o.id = t.org_id`;
    const r = rows[0];
    if (!r) throw new DomainError("TOKEN.NOT_FOUND", "no host credential with that id");
    await revokeRunnersOfCredential(tx, input.id, actor);
    return view(r);
  });
}

/**
 * The credential's host and sessions end with it (issue 22). Written here rather than through the
 * runners capability, which depends on identity (its credentials) and may not be depended on back.
 */
async function revokeRunnersOfCredential(tx: Tx, agentTokenId: string, actor: string): Promise<void> {
  const hosts = await tx.$queryRaw<{ id: string; org_id: string | null; state: RunnerState }[]>`
    UPDATE runner h SET state = 'revoked', state_changed_at = now(), revoked_at = now(), revoked_by = ${actor}
    FROM runner before
    WHERE h.agent_token_id = ${agentTokenId}::uuid AND before.id = h.id AND h.state <> 'revoked'
    RETURNING h.id, h.org_id, before.state`;
  await tx.$executeRaw`UPDATE agent_session SET ended_at = now() WHERE agent_token_id = ${agentTokenId}::uuid AND ended_at IS NULL`;
  for (const h of hosts) {
    if (h.org_id)
      await tx.$executeRaw`
        INSERT INTO transition_event (org_id, entity, from_state, to_state, reason, data)
        VALUES (${h.org_id}::uuid, 'runner', ${h.state}, 'revoked', 'revoke', ${JSON.stringify({ runner_id: h.id })}::jsonb)`;
    await recordAuditEvent(tx, {
      orgId: h.org_id,
      kind: "runner.revoked",
      actor,
      subject: h.id,
      data: { from: h.state, to: "revoked", agent_token_id: agentTokenId },
    });
  }
}
