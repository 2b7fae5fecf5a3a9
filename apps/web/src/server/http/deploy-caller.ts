import type { Db } from "@kiln/db";
import { authenticateApiToken, type DeployCaller } from "@kiln/engine";

/** The API token's caller as the deploy use cases take it (issue 18): org, role and audit actor. */
export async function deployCallerOf(db: Db, req: Request): Promise<DeployCaller> {
  const c = await authenticateApiToken(db, req.headers.get("authorization"));
  return { orgId: c.orgId, role: c.role, actor: c.name };
}
