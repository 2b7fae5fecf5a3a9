import { listRunTransitions } from "@kiln/engine";
import { z } from "zod";
import { readProcedure } from "../init.ts";

/** A run's ordered transition history (transition_event), oldest first. */
export const getRunHistory = readProcedure
  .input(z.object({ runId: z.uuid() }))
  .query(({ ctx, input }) => listRunTransitions(ctx.db, { orgId: ctx.tenant.orgId, runId: input.runId }));
