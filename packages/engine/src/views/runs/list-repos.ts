import type { DbOrTx } from "@kiln/db";
import type { TenantScope } from "../tenants/resolve-tenant.ts";

export interface RepoOption {
  id: string;
  full_name: string;
}

/** The org's repositories, for the runs list's repo filter. */
export async function listRepos(db: DbOrTx, scope: TenantScope): Promise<RepoOption[]> {
  return db.$queryRaw<RepoOption[]>`
    SELECT id, full_name FROM repo WHERE org_id = ${scope.orgId}::uuid ORDER BY full_name LIMIT 500`;
}
