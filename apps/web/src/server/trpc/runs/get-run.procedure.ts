import { z } from "zod";
import { getRunPage } from "../engine-views.ts";
import { services } from "../../context.ts";
import { readProcedure } from "../init.ts";

/**
 * The run page: getRun's RunView (as the API returns it, waiting jobs' queue position, reason and
 * estimated start included) plus classes, steps, artifacts, first failure.
 */
export const getRun = readProcedure
  .input(z.object({ runId: z.uuid() }))
  .query(({ ctx, input }) => getRunPage(ctx.db, ctx.tenant, { runId: input.runId, cfg: services().cfg }));
