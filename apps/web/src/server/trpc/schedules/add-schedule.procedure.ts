import { addSchedule as addScheduleUseCase } from "@kiln/engine";
import { z } from "zod";
import { operatorProcedure } from "../init.ts";

// Only bounds here: the domain's cron and time-zone checks own the rules and their messages
// (SCHEDULE.INVALID), the same for the API, the CLI and this page.
const addScheduleInput = z.object({
  repoId: z.uuid(),
  cron: z.string().trim().min(1, "enter a cron expression").max(100),
  timezone: z.string().trim().min(1).max(64).default("UTC"),
});

/** A member's schedule on one of the org's repositories (audited). */
export const addSchedule = operatorProcedure.input(addScheduleInput).mutation(({ ctx, input }) =>
  addScheduleUseCase(ctx.db, {
    caller: { orgId: ctx.tenant.orgId, role: ctx.tenant.role, actor: `web:${ctx.tenant.login}` },
    repoId: input.repoId,
    cron: input.cron,
    timezone: input.timezone,
  }),
);
