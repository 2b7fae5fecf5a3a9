import { sqlPool, type Db } from "@kiln/db";
import { DomainError, type Role } from "@kiln/domain";
import type { Caller } from "../runs/admit-manual.ts";
import { hashSecret, platformKey, verifyJobToken, type JobTokenClaims } from "./tokens.ts";

function bearer(header: string | null): string {
  const m = header ? /^Bearer\s+(\S+)$/i.exec(header.trim()) : null;
  if (!m || !m[1]) throw new DomainError("AUTH.UNAUTHENTICATED", "missing bearer token");
  return m[1];
}

/** An org-scoped API token; every /v1 call is authorised through this. */
export async function authenticateApiToken(db: Db, authorization: string | null): Promise<Caller> {
  const token = bearer(authorization);
  const rows = await db.$queryRaw<{ id: string; org_id: string; role: Role; name: string }[]>`
    SELECT id, org_id, role, name FROM api_token WHERE token_hash = ${hashSecret(token)} AND revoked_at IS NULL`;
  const t = rows[0];
  if (!t) throw new DomainError("AUTH.UNAUTHENTICATED", "invalid or revoked token");
  return { tokenId: t.id, orgId: t.org_id, role: t.role, name: `token:${t.name}` };
}

/** A host credential (from `kiln agent-token create`). */
/**
 * A host credential; with `sessionId`, also proves the session belongs to this credential (one
 * query: the claim path runs it on every long-poll).
 */
export async function authenticateAgentToken(
  db: Db,
  authorization: string | null,
  sessionId?: string,
): Promise<{ id: string; pool: string }> {
  const token = bearer(authorization);
  // Plain SQL: every claim long-poll starts here (ADR 0015).
  const rows = await sqlPool(db).query<{ id: string; pool: string; owns: boolean }>({
    name: "auth-agent-token",
    text: `SELECT t.id, t.pool,
                  ($2::uuid IS NULL OR EXISTS (SELECT 1 FROM agent_session s WHERE s.id = $2::uuid AND s.agent_token_id = t.id)) AS owns
           FROM agent_token t WHERE t.token_hash = $1 AND t.revoked_at IS NULL`,
    values: [hashSecret(token), sessionId ?? null],
  });
  const t = rows.rows[0];
  if (!t) throw new DomainError("AUTH.UNAUTHENTICATED", "invalid or revoked host credential");
  if (!t.owns) throw new DomainError("SESSION.NOT_FOUND", "unknown agent session; register again");
  return { id: t.id, pool: t.pool };
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
  const claims = verifyJobToken(await platformKey(db), bearer(authorization));
  if (!claims) throw new DomainError("AUTH.UNAUTHENTICATED", "invalid job token");
  if (claims.jobId !== jobId) throw new DomainError("AUTH.FORBIDDEN", "job token is for another job");
  return claims;
}
