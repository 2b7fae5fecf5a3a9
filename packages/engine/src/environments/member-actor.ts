import type { DbOrTx } from "@kiln/db";
import { DomainError, type Role } from "@kiln/domain";
import type { EnvActor } from "./env-actor.ts";

/**
 * The CLI's `--as <login>` (issue 18): the operator's shell acts as that member of the org, with
 * the member's role, so approvals and overrides made from it are attributable to a member. The
 * audit actor stays the shell's (`cli:<user>`) with the member named in the event's data.
 */
export async function memberActor(
  db: DbOrTx,
  input: { orgId: string; login: string; actor: string },
): Promise<EnvActor> {
  const rows = await db.$queryRaw<{ user_id: string; role: Role }[]>`
    SELECT m.user_id, m.role FROM membership m JOIN app_user u ON u.id = m.user_id
    WHERE m.org_id = ${input.orgId}::uuid AND u.login = ${input.login}`;
  const m = rows[0];
  if (!m) throw new DomainError("MEMBER.NOT_FOUND", `${input.login} is not a member of this org`);
  return {
    orgId: input.orgId,
    role: m.role,
    userId: m.user_id,
    login: input.login,
    actor: `${input.actor}:as:${input.login}`,
  };
}

/** An org's id by slug (the CLI's `<org>` argument). */
export async function orgIdBySlug(db: DbOrTx, slug: string): Promise<string> {
  const rows = await db.$queryRaw<{ id: string }[]>`SELECT id FROM org WHERE slug = ${slug}`;
  const r = rows[0];
  if (!r) throw new DomainError("ORG.NOT_FOUND", `no org ${slug}`);
  return r.id;
}
