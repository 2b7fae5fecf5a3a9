import { listRepos as listReposView } from "../engine-views.ts";
import { readProcedure } from "../init.ts";

/** The org's repositories, for the runs filter. */
export const listRepos = readProcedure.query(({ ctx }) => listReposView(ctx.db, ctx.tenant));
