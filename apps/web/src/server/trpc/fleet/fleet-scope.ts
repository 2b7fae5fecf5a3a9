import { isPlatformAdmin } from "@kiln/engine";
import type { Db } from "@kiln/db";
import { TRPCError } from "@trpc/server";

/**
 * Whose hosts a fleet procedure acts on (issue 22, ADR 0035): the caller's org (its admins, already
 * checked in the tenant query), or every host for a platform operator who asks for all. The org id
 * goes into the engine's query; null only after the operator flag was read from the database.
 */
export async function fleetOrgScope(
  db: Db,
  input: { all?: boolean | undefined },
  ctx: { userId: string; orgId: string },
) {
  if (!input.all) return ctx.orgId;
  if (!(await isPlatformAdmin(db, ctx.userId)))
    throw new TRPCError({ code: "FORBIDDEN", message: "only platform operators see every host" });
  return null;
}
