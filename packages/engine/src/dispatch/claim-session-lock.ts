import { DomainError } from "@kiln/domain";
import type { SqlClient } from "../shared/sql-pool.ts";
import { quarantined, type ClaimRequest, type SessionRow } from "./claim-types.ts";

/** What the claim transaction's first statement decided before any candidate is tried. */
export type LockedSession =
  | { kind: "session"; session: SessionRow }
  | { kind: "none" }
  | { kind: "replayed"; attemptId: string };

/**
 * The claim transaction's first statement and its checks: the session's row lock, the host
 * credential, the runner's standing and a replayed claim id.
 */
export async function lockClaimSession(
  c: SqlClient,
  req: ClaimRequest,
  credential: string | null,
): Promise<LockedSession> {
  // The update is the session's row lock too: one claim per session at a time (capacity check).
  // The host credential is checked here as well, on every claim, not only by the cached pool
  // lookup: one round trip less than a separate authentication query (ADR 0015).
  // Revocation is checked on the session's own credential even when the caller authenticated
  // it (credentialHash omitted): a revoked host claims nothing, whoever asks for it.
  const locked = await c.query<
    SessionRow & {
      token_ok: boolean;
      revoked: boolean;
      replay_id: string | null;
      replay_session: string | null;
      runner_state: string | null;
      quarantine_reason: string | null;
    }
  >({
    name: "claim-session-5",
    text: `WITH s AS (
             UPDATE agent_session SET last_seen_at = now()
             WHERE id = $1::uuid
               AND ($3::text IS NULL OR agent_token_id = (SELECT id FROM agent_token WHERE token_hash = $3))
             RETURNING id, pool, capacity, hostname, agent_token_id, labels, runner_labels, sizes, runner_id)
           SELECT s.id, s.pool, s.capacity, s.hostname, t.org_id AS token_org, s.labels->>'isolation' AS isolation,
                  s.runner_labels, s.sizes,
                  p.min_isolation, p.admits_untrusted, p.untrusted_on_process, p.owner_org_id, p.development,
                  p.interruptible, p.serves,
                  ($3::text IS NULL OR EXISTS (SELECT 1 FROM agent_token WHERE token_hash = $3)) AS token_ok,
                  (t.revoked_at IS NOT NULL
                   OR ($3::text IS NOT NULL AND EXISTS (SELECT 1 FROM agent_token WHERE token_hash = $3 AND revoked_at IS NOT NULL))) AS revoked,
                  (SELECT count(*)::int FROM attempt WHERE session_id = s.id AND status = 'running') AS running,
                  r.id AS replay_id, r.session_id AS replay_session,
                  h.state AS runner_state, h.quarantine_reason
           FROM (SELECT 1) AS one LEFT JOIN s ON true LEFT JOIN agent_token t ON t.id = s.agent_token_id
             LEFT JOIN pool p ON p.name = s.pool LEFT JOIN runner h ON h.id = s.runner_id
             LEFT JOIN attempt r ON r.claim_request_id = $2`,
    values: [req.sessionId, req.claimRequestId, credential],
  });
  const session = locked.rows[0];
  if (!session?.token_ok) throw new DomainError("AUTH.UNAUTHENTICATED", "invalid host credential");
  if (session.revoked) throw new DomainError("AUTH.CREDENTIAL_REVOKED", "this host credential was revoked");
  if (!session.id) throw new DomainError("SESSION.NOT_FOUND", "unknown agent session; register again");
  if (session.runner_state === "revoked") throw new DomainError("AUTH.CREDENTIAL_REVOKED", "this host was revoked");
  if (session.runner_state === "quarantined") throw quarantined(session.quarantine_reason);
  // A draining host finishes what it runs and claims nothing new (a replayed claim is not new).
  if (session.runner_state === "draining" && !session.replay_id) return { kind: "none" };
  if (session.replay_id) {
    // A claim id is only meaningful to the session that made it.
    if (session.replay_session !== req.sessionId)
      throw new DomainError("REQUEST.INVALID", "claim_request_id already used by another session");
    return { kind: "replayed", attemptId: session.replay_id };
  }
  return { kind: "session", session };
}
