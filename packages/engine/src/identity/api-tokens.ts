import { withTx, type Db } from "@kiln/db";
import { DomainError, type Role } from "@kiln/domain";
import { recordAuditEvent } from "../audit/index.ts";

// Listing and revoking an org's API tokens (`kiln token list|revoke`, the dashboard's tokens page).
// Both are scoped by org in the query itself: another org's token id answers TOKEN.NOT_FOUND, the
// same as an id that never existed, so ids cannot be probed across tenants.

export interface ApiTokenView {
  id: string;
  name: string;
  role: Role;
  createdAt: string;
  expiresAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
  state: "active" | "expired" | "revoked";
}

type Row = {
  id: string;
  name: string;
  role: Role;
  created_at: Date;
  expires_at: Date;
  last_used_at: Date | null;
  revoked_at: Date | null;
  expired: boolean;
};

function view(r: Row): ApiTokenView {
  return {
    id: r.id,
    name: r.name,
    role: r.role,
    createdAt: r.created_at.toISOString(),
    expiresAt: r.expires_at.toISOString(),
    lastUsedAt: r.last_used_at?.toISOString() ?? null,
    revokedAt: r.revoked_at?.toISOString() ?? null,
    state: r.revoked_at ? "revoked" : r.expired ? "expired" : "active",
  };
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Newest first; bounded (an org with more than 500 tokens has a different problem). */
export async function listApiTokens(db: Db, input: { orgSlug: string }): Promise<ApiTokenView[]> {
  const rows = await db.$queryRaw<Row[]>`
    SELECT t.id, t.name, t.role, t.created_at, t.expires_at, t.last_used_at, t.revoked_at, t.expires_at <= now() AS expired
    FROM api_token t JOIN org o ON o.id = t.org_id WHERE o.slug = ${input.orgSlug}
    ORDER BY t.created_at DESC, t.id LIMIT 500`;
  return rows.map(view);
}

/**
 * Idempotent: revoking a revoked token answers it unchanged (its first revocation time stays) and
 * records nothing; the first revocation is audited in its own transaction.
 */
export async function revokeApiToken(
  db: Db,
  input: { orgSlug: string; tokenId: string; actor?: string },
): Promise<ApiTokenView> {
  if (!UUID.test(input.tokenId)) throw new DomainError("TOKEN.NOT_FOUND", "no such token in this org");
  return withTx(db, "revoke-api-token", async (tx) => {
    const rows = await tx.$queryRaw<(Row & { org_id: string; was_revoked: boolean })[]>`
      WITH before AS (
        SELECT t.id, t.revoked_at IS NOT NULL AS was_revoked FROM api_token t JOIN org o ON o.id = t.org_id
        WHERE o.slug = ${input.orgSlug} AND t.id = ${input.tokenId}::uuid FOR UPDATE OF t)
      UPDATE api_token t SET revoked_at = COALESCE(t.revoked_at, now())
      FROM before WHERE t.id = before.id
      RETURNING t.id, t.org_id, t.name, t.role, t.created_at, t.expires_at, t.last_used_at, t.revoked_at,
        t.expires_at <= now() AS expired, before.was_revoked`;
    const r = rows[0];
    if (!r) throw new DomainError("TOKEN.NOT_FOUND", "no such token in this org");
    if (!r.was_revoked)
      await recordAuditEvent(tx, {
        orgId: r.org_id,
        kind: "api_token.revoked",
        actor: input.actor ?? "system:admin",
        subject: r.id,
        data: { name: r.name, role: r.role },
      });
    return view(r);
  });
}
