import { interruptibleShares } from "@kiln/engine";
import { z } from "zod";
import { adminProcedure } from "../init.ts";
import { fleetOrgScope } from "./fleet-scope.ts";

/** Per pool: background job-minutes on interruptible capacity against the 55% target (seed 002). */
export const interruptibleShare = adminProcedure
  .input(z.object({ all: z.boolean().optional(), windowHours: z.number().int().min(1).max(2160).default(24) }))
  .query(async ({ ctx, input }) =>
    interruptibleShares(ctx.db, {
      orgId: await fleetOrgScope(ctx.db, input, { userId: ctx.user.id, orgId: ctx.tenant.orgId }),
      windowHours: input.windowHours,
    }),
  );
