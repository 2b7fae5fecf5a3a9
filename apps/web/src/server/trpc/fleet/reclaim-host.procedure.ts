import { requestReclaim } from "@kiln/engine";
import { z } from "zod";
import { adminProcedure } from "../init.ts";
import { fleetOrgScope } from "./fleet-scope.ts";

/** A reclaim notice to an interruptible host (what the cloud's drain notice does); audited. */
export const reclaimHost = adminProcedure
  .input(
    z.object({ all: z.boolean().optional(), pool: z.string().min(1).max(110), runnerId: z.uuid("not a runner id") }),
  )
  .mutation(async ({ ctx, input }) =>
    requestReclaim(ctx.db, {
      pool: input.pool,
      host: input.runnerId,
      orgId: await fleetOrgScope(ctx.db, input, { userId: ctx.user.id, orgId: ctx.tenant.orgId }),
      actor: `web:${ctx.tenant.login}`,
    }),
  );
