import { usagePeriod, usageReport } from "@kiln/engine";
import { z } from "zod";
import { readProcedure } from "../init.ts";

/** The usage page (issue 33, docs/adr/0045): the org's showback for a period, in the tenant query's org. */
export const getUsage = readProcedure
  .input(z.object({ from: z.string().max(40).optional(), to: z.string().max(40).optional() }))
  .query(({ ctx, input }) =>
    usageReport(ctx.db, { orgId: ctx.tenant.orgId, ...usagePeriod(input.from, input.to, new Date()) }),
  );
