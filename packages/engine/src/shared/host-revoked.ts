import type { Tx } from "@kiln/db";
import { DomainError } from "@kiln/domain";

/**
 * Refuses an attempt whose host credential was revoked (ATTEMPT.HOST_REVOKED): the one check every
 * job-token grant makes (ID-token minting, the secret broker, artifact and cache grants; issue 28
 * found the broker and the grants without it). Between the revocation and the fence (within one
 * lease) the attempt still looks current, and a revoked host must get nothing new meanwhile.
 */
export async function assertHostNotRevoked(tx: Tx, attemptId: string): Promise<void> {
  const rows = await tx.$queryRaw<{ revoked: boolean }[]>`
    SELECT EXISTS (SELECT 1 FROM attempt a JOIN agent_session s ON s.id = a.session_id
                   JOIN agent_token t ON t.id = s.agent_token_id
                   WHERE a.id = ${attemptId}::uuid AND t.revoked_at IS NOT NULL) AS revoked`;
  if (rows[0]?.revoked)
    throw new DomainError("ATTEMPT.HOST_REVOKED", "the host credential of this attempt was revoked");
}
