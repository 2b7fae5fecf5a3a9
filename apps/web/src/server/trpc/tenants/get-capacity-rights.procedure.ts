import { isPlatformAdmin } from "@kiln/engine";
import { authedProcedure } from "../init.ts";

/** Which capacity controls the settings page offers; the server enforces the same rules regardless. */
export const getCapacityRights = authedProcedure.query(async ({ ctx }) => ({
  platformAdmin: await isPlatformAdmin(ctx.db, ctx.user.id),
}));
