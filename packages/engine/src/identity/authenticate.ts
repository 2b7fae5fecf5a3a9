import { sqlPool, type Db } from "@kiln/db";
import { DomainError, type Role } from "@kiln/domain";
import type { Caller } from "../runs/index.ts";
import { hashSecret, verifyJobTokenIn, type JobTokenClaims } from "./tokens.ts";

function bearer(header: string | null): string {
  const m = header ? /^Bearer\s+(\S+)$/i.exec(header.trim()) : null;
  if (!m || !m[1]) throw new DomainError("AUTH.UNAUTHENTICATED", "missing bearer token");
  return m[1];
}

/**
 * An org-scoped API token; every /v1 call is authorised through this. Expired and revoked tokens
 * are told apart (AUTH.TOKEN_EXPIRED, AUTH.TOKEN_REVOKED) so an integration's owner knows which fix
 * applies. The last-used time is written in the same statement, and only when it is over a minute
 * old: a busy token costs one row write a minute, not one per request.
 */
export async function authenticateApiToken(db: Db, authorization: string | null): Promise<Caller> {
  const token = bearer(authorization);
  // A personal token (issue 18) acts as its member: the member's current role, and refused once
  // the member has left the org.
  const rows = await db.$queryRaw<
    {
      id: string;
      org_id: string;
      role: Role;
      name: string;
      revoked: boolean;
      expired: boolean;
      user_id: string | null;
      login: string | null;
      member_role: Role | null;
    }[]
  >`
    WITH t AS (
      SELECT id, org_id, role, name, revoked_at IS NOT NULL AS revoked, expires_at <= now() AS expired, last_used_at, user_id
      FROM api_token WHERE token_hash = ${hashSecret(token)}),
    touched AS (
      UPDATE api_token a SET last_used_at = now() FROM t
      WHERE a.id = t.id AND NOT t.revoked AND NOT t.expired
        AND (t.last_used_at IS NULL OR t.last_used_at < now() - interval '1 minute')
      RETURNING a.id)
    SELECT t.id, t.org_id, t.role, t.name, t.revoked, t.expired, t.user_id, u.login, m.role AS member_role
    FROM t LEFT JOIN app_user u ON u.id = t.user_id
    LEFT JOIN membership m ON m.org_id = t.org_id AND m.user_id = t.user_id`;
  const t = rows[0];
  if (!t) throw new DomainError("AUTH.UNAUTHENTICATED", "invalid token");
  if (t.revoked) throw new DomainError("AUTH.TOKEN_REVOKED", "this API token was revoked");
  if (t.expired) throw new DomainError("AUTH.TOKEN_EXPIRED", "this API token has expired; create a new one");
  if (t.user_id === null) return { tokenId: t.id, orgId: t.org_id, role: t.role, name: `token:${t.name}` };
  if (!t.member_role || !t.login)
    throw new DomainError("AUTH.UNAUTHENTICATED", "the member this token acts as is no longer in the org");
  return {
    tokenId: t.id,
    orgId: t.org_id,
    role: t.member_role,
    name: `token:${t.name}`,
    userId: t.user_id,
    login: t.login,
  };
}

/**
 * A host credential (from `kiln agent-token create`); with `sessionId`, also proves the session
 * belongs to this credential (one query: the FIFO claim path runs it on every long-poll).
 */
export async function authenticateAgentToken(
  db: Db,
  authorization: string | null,
  sessionId?: string,
): Promise<{ id: string; pool: string; orgId: string | null }> {
  const token = bearer(authorization);
  // Plain SQL: every claim long-poll starts here (ADR 0015).
  const rows = await sqlPool(db).query<{
    id: string;
    pool: string;
    org_id: string | null;
    revoked: boolean;
    owns: boolean;
  }>({
    name: "auth-agent-token-2",
    text: `SELECT t.id, t.pool, t.org_id, t.revoked_at IS NOT NULL AS revoked,
                  ($2::uuid IS NULL OR EXISTS (SELECT 1 FROM agent_session s WHERE s.id = $2::uuid AND s.agent_token_id = t.id)) AS owns
           FROM agent_token t WHERE t.token_hash = $1`,
    values: [hashSecret(token), sessionId ?? null],
  });
  const t = rows.rows[0];
  if (!t) throw new DomainError("AUTH.UNAUTHENTICATED", "invalid host credential");
  if (t.revoked) throw new DomainError("AUTH.CREDENTIAL_REVOKED", "this host credential was revoked");
  if (!t.owns) throw new DomainError("SESSION.NOT_FOUND", "unknown agent session; register again");
  return { id: t.id, pool: t.pool, orgId: t.org_id };
}

/**
 * The hash a host credential is stored under, from an Authorization header (401 when missing).
 * The claim checks it inside its own first statement (claimJob's credentialHash).
 */
export function agentCredentialHash(authorization: string | null): string {
  return hashSecret(bearer(authorization));
}

/** A job-scoped token: authorises exactly one (job, attempt, epoch). */
export async function authenticateJobToken(
  db: Db,
  authorization: string | null,
  jobId: string,
): Promise<JobTokenClaims> {
  const r = await verifyJobTokenIn(db, bearer(authorization));
  // One code for every refusal: which check failed is not the caller's business (a forger learns
  // nothing), and an honest agent's remedy is the same (its attempt is over).
  if (!r.ok) throw new DomainError("AUTH.UNAUTHENTICATED", "invalid job token");
  if (r.claims.jobId !== jobId) throw new DomainError("AUTH.FORBIDDEN", "job token is for another job");
  return r.claims;
}
