import { retryRun as retryRunUseCase } from "@kiln/engine";
import { z } from "zod";
import { operatorProcedure } from "../init.ts";

/**
 * The same use case as POST /v1/workflow-runs/{id}/retry: a new run with the pinned definition and
 * a parent link. retryRun's caller is shaped for API tokens; tokenId is unused by it.
 */
export const retryRun = operatorProcedure.input(z.object({ runId: z.uuid() })).mutation(({ ctx, input }) =>
  retryRunUseCase(ctx.db, {
    caller: {
      tokenId: ctx.tenant.userId,
      orgId: ctx.tenant.orgId,
      role: ctx.tenant.role,
      name: ctx.tenant.login,
      userId: ctx.tenant.userId,
    },
    runId: input.runId,
  }),
);
