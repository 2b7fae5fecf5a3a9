import type { DbOrTx } from "@kiln/db";
import type { Role } from "@kiln/domain";
import type { TenantScope } from "./resolve-tenant.ts";

/**
 * For routes addressed by job id rather than org slug (the log stream): the job's org, if the user
 * is a member of it, from one query joining the job to the user's membership. Null otherwise, and
 * the caller answers exactly as for a job that does not exist.
 */
export async function resolveJobTenant(
  db: DbOrTx,
  input: { userId: string; login: string; jobId: string },
): Promise<TenantScope | null> {
  const rows = await db.$queryRaw<{ org_id: string; slug: string; role: Role }[]>`
    SELECT j.org_id, o.slug, m.role
    FROM job_run j
    JOIN org o ON o.id = j.org_id
    JOIN membership m ON m.org_id = j.org_id AND m.user_id = ${input.userId}::uuid
    WHERE j.id = ${input.jobId}::uuid`;
  const r = rows[0];
  return r
    ? ({ orgId: r.org_id, slug: r.slug, role: r.role, userId: input.userId, login: input.login } as TenantScope)
    : null;
}
