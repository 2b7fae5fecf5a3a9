import { cancelRun as cancelRunUseCase } from "@kiln/engine";
import { z } from "zod";
import { operatorProcedure } from "../init.ts";

/** The same use case as POST /v1/workflow-runs/{id}/cancel; the actor is the signed-in login. */
export const cancelRun = operatorProcedure
  .input(z.object({ runId: z.uuid() }))
  .mutation(({ ctx, input }) =>
    cancelRunUseCase(ctx.db, { runId: input.runId, orgId: ctx.tenant.orgId, actor: ctx.tenant.login }),
  );
