import { z } from "zod";
import { getRunPage } from "../engine-views.ts";
import { readProcedure } from "../init.ts";

/** The run page: getRun's RunView (as the API returns it) plus classes, steps, artifacts, first failure. */
export const getRun = readProcedure
  .input(z.object({ runId: z.uuid() }))
  .query(({ ctx, input }) => getRunPage(ctx.db, ctx.tenant, { runId: input.runId }));
