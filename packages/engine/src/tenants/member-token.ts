import { withTx, type Db } from "@kiln/db";
import { DomainError, type Role } from "@kiln/domain";
import { recordAuditEvent } from "../audit/index.ts";
import { hashSecret, newSecret } from "../identity/index.ts";
import { orgIdOf, UNNAMED_ACTOR } from "./admin.ts";

/**
 * A personal API token (`kiln token create <org> --member <login>`, issue 18): it acts as that
 * member, so approvals, overrides and promotion requests made with it are theirs. Its role is
 * read from the membership at every authentication (authenticateApiToken); the stored role is
 * the one at creation, for the token list.
 */
export async function createMemberApiToken(
  db: Db,
  input: { orgSlug: string; login: string; name?: string; expiresInDays?: number; actor?: string },
): Promise<{ id: string; token: string; expiresAt: string; name: string; role: Role; login: string }> {
  const days = input.expiresInDays ?? 90;
  if (!Number.isInteger(days) || days < 1 || days > 366)
    throw new DomainError("REQUEST.INVALID", "expiry must be a whole number of days from 1 to 366");
  const name = input.name ?? `member:${input.login}`;
  if (name.length < 1 || name.length > 64 || name.trim() !== name)
    throw new DomainError("REQUEST.INVALID", "token name must be 1-64 characters without surrounding spaces");
  const orgId = await orgIdOf(db, input.orgSlug);
  const token = newSecret("kiln");
  return withTx(db, "create-member-api-token", async (tx) => {
    const members = await tx.$queryRaw<{ user_id: string; role: Role }[]>`
      SELECT m.user_id, m.role FROM membership m JOIN app_user u ON u.id = m.user_id
      WHERE m.org_id = ${orgId}::uuid AND u.login = ${input.login} FOR SHARE OF m`;
    const m = members[0];
    if (!m) throw new DomainError("MEMBER.NOT_FOUND", `${input.login} is not a member of ${input.orgSlug}`);
    const rows = await tx.$queryRaw<{ id: string; expires_at: Date }[]>`
      INSERT INTO api_token (org_id, role, name, token_hash, expires_at, user_id)
      VALUES (${orgId}::uuid, ${m.role}, ${name}, ${hashSecret(token)}, now() + make_interval(days => ${days}::int),
              ${m.user_id}::uuid)
      RETURNING id, expires_at`;
    const row = rows[0];
    if (!row) throw new Error("api_token insert returned nothing");
    await recordAuditEvent(tx, {
      orgId,
      kind: "api_token.created",
      actor: input.actor ?? UNNAMED_ACTOR,
      subject: row.id,
      data: { name, role: m.role, member: input.login, expires_at: row.expires_at.toISOString() },
    });
    return { id: row.id, token, expiresAt: row.expires_at.toISOString(), name, role: m.role, login: input.login };
  });
}
