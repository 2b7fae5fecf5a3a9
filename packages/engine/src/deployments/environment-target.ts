// The environment a caller names by id, resolved with the caller's org in the query: another org's
// environment is ENV.NOT_FOUND exactly like one that never existed (nothing leaks across tenants).
import type { DbOrTx } from "@kiln/db";
import { DomainError, type Role } from "@kiln/domain";

export interface DeployCaller {
  orgId: string;
  role: Role;
  /** The audit trail's actor: `token:<id>`, `web:<login>`, `cli:<user>`. */
  actor: string;
}

export interface EnvironmentRef {
  id: string;
  orgId: string;
  repoId: string;
  name: string;
  production: boolean;
}

export async function environmentOf(db: DbOrTx, orgId: string, environmentId: string): Promise<EnvironmentRef> {
  if (!/^[0-9a-f-]{36}$/i.test(environmentId)) throw new DomainError("ENV.NOT_FOUND", "no such environment");
  const rows = await db.$queryRaw<{ id: string; org_id: string; repo_id: string; name: string; production: boolean }[]>`
    SELECT id, org_id, repo_id, name, production FROM environment
    WHERE id = ${environmentId}::uuid AND org_id = ${orgId}::uuid`;
  const r = rows[0];
  if (!r) throw new DomainError("ENV.NOT_FOUND", "no such environment");
  return { id: r.id, orgId: r.org_id, repoId: r.repo_id, name: r.name, production: r.production };
}

/** Deploy configuration, variables and secrets are an org admin's (like the gate policy). */
export function requireAdmin(caller: DeployCaller, what: string): void {
  if (caller.role !== "admin") throw new DomainError("AUTH.FORBIDDEN", `${what} needs the admin role`);
}
