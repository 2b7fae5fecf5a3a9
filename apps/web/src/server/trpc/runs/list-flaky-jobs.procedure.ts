import { z } from "zod";
import { listFlakyJobs as listFlakyJobsView } from "../engine-views.ts";
import { readProcedure } from "../init.ts";

/** A repo's flaky jobs (issue 20), the same view as GET /v1/repos/{id}/flaky-jobs. */
export const listFlakyJobs = readProcedure
  .input(z.object({ repoId: z.uuid() }))
  .query(({ ctx, input }) => listFlakyJobsView(ctx.db, { orgId: ctx.tenant.orgId, repoId: input.repoId }));
