import { setPoolInterruptible as setPoolInterruptibleUseCase } from "@kiln/engine";
import { z } from "zod";
import { adminProcedure } from "../init.ts";
import { fleetOrgScope } from "./fleet-scope.ts";

/** Flags a pool interruptible (the org's own pools; any pool for an operator with `all`); audited. */
export const setPoolInterruptible = adminProcedure
  .input(
    z.object({
      all: z.boolean().optional(),
      pool: z.string().min(1).max(110),
      interruptible: z.boolean(),
      serves: z.string().trim().min(1, "name the on-demand pool it serves").max(110).nullable().optional(),
    }),
  )
  .mutation(async ({ ctx, input }) =>
    setPoolInterruptibleUseCase(ctx.db, {
      pool: input.pool,
      interruptible: input.interruptible,
      serves: input.serves ?? null,
      actor: `web:${ctx.tenant.login}`,
      orgId: await fleetOrgScope(ctx.db, input, { userId: ctx.user.id, orgId: ctx.tenant.orgId }),
    }),
  );
