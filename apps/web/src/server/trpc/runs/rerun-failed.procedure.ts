import { rerunFailedJobs } from "@kiln/engine";
import { z } from "zod";
import { operatorProcedure } from "../init.ts";

/** The same use case as POST /v1/workflow-runs/{id}/rerun-failed; tokenId is unused by it. */
export const rerunFailed = operatorProcedure.input(z.object({ runId: z.uuid() })).mutation(({ ctx, input }) =>
  rerunFailedJobs(ctx.db, {
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
