import type { DbOrTx } from "@kiln/db";
import { DomainError, type Role } from "@kiln/domain";

declare const resolved: unique symbol;

/**
 * An org the signed-in user belongs to. Only resolveTenant makes one, so a view that takes a
 * TenantScope cannot be called with an org id lifted from a URL or a request body.
 */
export interface OrgScope {
  readonly orgId: string;
  readonly [resolved]: true;
}

/**
 * The org an API token speaks for (authenticateApiToken proved it, as resolveTenant proves a
 * membership): lets the public API use the same org-scoped views as the dashboard (issue 19).
 */
export function scopeOfApiCaller(caller: { orgId: string; tokenId: string }): OrgScope {
  return { orgId: caller.orgId } as OrgScope;
}

export interface TenantScope extends OrgScope {
  readonly slug: string;
  readonly role: Role;
  readonly userId: string;
  readonly login: string;
}

export const ALL_ROLES: readonly Role[] = ["admin", "member", "auditor"];
/** Roles that may change a run (cancel, retry); auditors only read. */
export const OPERATOR_ROLES: readonly Role[] = ["admin", "member"];
/** Roles that may change the org's settings (entitlements, egress allow-list). */
export const ADMIN_ROLES: readonly Role[] = ["admin"];

/**
 * The org named by `orgSlug`, if the user's membership in it has one of `roles`. Membership and role
 * are read in the same query that finds the org, never from the session cookie, so removing a
 * member or lowering their role takes effect on their next request rather than when the JWT expires.
 */
export async function resolveTenant(
  db: DbOrTx,
  input: { userId: string; login: string; orgSlug: string; roles: readonly Role[] },
): Promise<TenantScope> {
  const rows = await db.$queryRaw<{ org_id: string; role: Role }[]>`
    SELECT o.id AS org_id, m.role
    FROM org o
    JOIN membership m ON m.org_id = o.id AND m.user_id = ${input.userId}::uuid
    WHERE o.slug = ${input.orgSlug} AND m.role = ANY(${[...input.roles]}::text[])`;
  const row = rows[0];
  if (row) {
    return {
      orgId: row.org_id,
      slug: input.orgSlug,
      role: row.role,
      userId: input.userId,
      login: input.login,
    } as TenantScope;
  }
  // Only on refusal: tell a member with the wrong role why, without revealing to outsiders whether
  // an org with that slug exists (both outsiders' cases get the same message).
  const member = await db.$queryRaw<{ role: Role }[]>`
    SELECT m.role FROM org o JOIN membership m ON m.org_id = o.id AND m.user_id = ${input.userId}::uuid
    WHERE o.slug = ${input.orgSlug}`;
  const role = member[0]?.role;
  if (role)
    throw new DomainError(
      "AUTH.FORBIDDEN",
      `your role in ${input.orgSlug} (${role}) cannot do this; it needs ${input.roles.join(" or ")}`,
      { reason: "role" },
    );
  throw new DomainError("AUTH.FORBIDDEN", `you are not a member of an org named ${input.orgSlug}`, {
    reason: "membership",
  });
}
