import { resolveJobTenant } from "../trpc/engine-views.ts";
import { services } from "../context.ts";
import { currentUser } from "./index.ts";

/**
 * For /v1 routes the dashboard calls from the browser (the job log stream and raw download): the
 * job's org when the request carries a session of one of that org's members, else null (answer as
 * for an unknown job). Membership is read in the query, as for every tRPC procedure. These are
 * GET-only reads, and the routes send no CORS headers, so a session cookie cannot be used by
 * another site to read a log.
 */
export async function sessionOrgForJob(jobId: string): Promise<{ orgId: string; actor: string } | null> {
  const user = await currentUser();
  if (!user) return null;
  const scope = await resolveJobTenant(services().db, { userId: user.id, login: user.login, jobId });
  return scope ? { orgId: scope.orgId, actor: user.login } : null;
}
