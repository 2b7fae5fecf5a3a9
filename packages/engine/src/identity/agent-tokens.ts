import type { Db } from "@kiln/db";
import { DomainError } from "@kiln/domain";

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

/** Idempotent: a second revocation keeps the first time. */
export async function revokeAgentToken(db: Db, input: { id: string }): Promise<AgentTokenView> {
  if (!UUID.test(input.id)) throw new DomainError("TOKEN.NOT_FOUND", "no host credential with that id");
  const rows = await db.$queryRaw<Row[]>`
    WITH t AS (UPDATE agent_token SET revoked_at = COALESCE(revoked_at, now()) WHERE id = ${input.id}::uuid RETURNING *)
    SELECT t.id, t.name, t.pool, o.slug AS org, t.created_at, t.revoked_at,
           (SELECT max(s.last_seen_at) FROM agent_session s WHERE s.agent_token_id = t.id) AS last_seen_at,
           (SELECT count(*)::int FROM agent_session s WHERE s.agent_token_id = t.id) AS sessions
    FROM t LEFT JOIN org o ON o.id = t.org_id`;
  const r = rows[0];
  if (!r) throw new DomainError("TOKEN.NOT_FOUND", "no host credential with that id");
  return view(r);
}
