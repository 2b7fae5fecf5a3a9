// Who may touch an org's secrets through the API: its admins, with the org named in the path
// checked against the caller's own in the query. Another org's slug or repo id is a 404, exactly
// like one that does not exist, so the API tells an outsider nothing about other tenants.
import type { DbOrTx } from "@kiln/db";
import { DomainError, type Role } from "@kiln/domain";
import type { SecretTarget } from "./secret-target.ts";

export interface OrgCaller {
  orgId: string;
  role: Role;
}

function requireRole(caller: OrgCaller, roles: readonly Role[], what: string): void {
  if (!roles.includes(caller.role))
    throw new DomainError("AUTH.FORBIDDEN", `${what} needs the ${roles.join(" or ")} role`);
}

/** The caller's org when `slug` names it; ORG.NOT_FOUND otherwise. */
export async function callerOrg(
  db: DbOrTx,
  caller: OrgCaller,
  slug: string,
  roles: readonly Role[],
  what: string,
): Promise<{ orgId: string; slug: string }> {
  requireRole(caller, roles, what);
  const rows = await db.$queryRaw<{ id: string }[]>`
    SELECT id FROM org WHERE slug = ${slug} AND id = ${caller.orgId}::uuid`;
  if (!rows[0]) throw new DomainError("ORG.NOT_FOUND", "no such org");
  return { orgId: rows[0].id, slug };
}

/** The target of an admin's secret call: an org by slug, or a repo by id, both the caller's own. */
export async function adminSecretTarget(
  db: DbOrTx,
  caller: OrgCaller,
  where: { orgSlug: string } | { repoId: string },
): Promise<SecretTarget> {
  requireRole(caller, ["admin"], "managing secrets");
  if ("orgSlug" in where) {
    const org = await callerOrg(db, caller, where.orgSlug, ["admin"], "managing secrets");
    return { orgId: org.orgId, repoId: null, scope: "org" };
  }
  const rows = await db.$queryRaw<{ id: string }[]>`
    SELECT id FROM repo WHERE id = ${where.repoId}::uuid AND org_id = ${caller.orgId}::uuid`;
  if (!rows[0]) throw new DomainError("REPO.NOT_FOUND", "no such repository");
  return { orgId: caller.orgId, repoId: rows[0].id, scope: `repo:${rows[0].id}` };
}
