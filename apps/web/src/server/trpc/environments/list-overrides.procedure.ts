import { listOverrides as listOrgOverrides } from "@kiln/engine";
import { readProcedure } from "../init.ts";

/** Override use (break glass), newest first: the org home's watched signal. */
export const listOverrides = readProcedure.query(({ ctx }) => listOrgOverrides(ctx.db, ctx.tenant.orgId));
