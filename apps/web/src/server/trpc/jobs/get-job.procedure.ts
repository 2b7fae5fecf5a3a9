import { z } from "zod";
import { getJobHeader } from "../engine-views.ts";
import { readProcedure } from "../init.ts";

/** The job log page's header (name, status, class, cause); the log itself streams from /v1. */
export const getJob = readProcedure
  .input(z.object({ runId: z.uuid(), jobId: z.uuid() }))
  .query(({ ctx, input }) => getJobHeader(ctx.db, ctx.tenant, input));
