import type { DeployCaller } from "@kiln/engine";
import { z } from "zod";

/** Every deploy procedure names one environment of the org in the URL. */
export const envInput = z.object({ environmentId: z.string().uuid("not an environment id") });

/** The dashboard session as the deploy use cases take it: the audit trail names the member. */
export function sessionCaller(tenant: { orgId: string; role: DeployCaller["role"]; login: string }): DeployCaller {
  return { orgId: tenant.orgId, role: tenant.role, actor: `web:${tenant.login}` };
}
