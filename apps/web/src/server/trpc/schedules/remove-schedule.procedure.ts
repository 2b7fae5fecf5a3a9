import { removeSchedule as removeScheduleUseCase } from "@kiln/engine";
import { z } from "zod";
import { operatorProcedure } from "../init.ts";

/** Removes a schedule added through the API or here (audited); the workflow file's own are changed there. */
export const removeSchedule = operatorProcedure
  .input(z.object({ scheduleId: z.uuid() }))
  .mutation(async ({ ctx, input }) => {
    await removeScheduleUseCase(ctx.db, {
      caller: { orgId: ctx.tenant.orgId, role: ctx.tenant.role, actor: `web:${ctx.tenant.login}` },
      scheduleId: input.scheduleId,
    });
    return { removed: true };
  });
