import { getOrgOverview } from "../engine-views.ts";
import { readProcedure } from "../init.ts";

/** Org home: active jobs, recent runs, infrastructure-failure ratio, queue wait. */
export const getOverview = readProcedure.query(({ ctx }) => getOrgOverview(ctx.db, ctx.tenant));
