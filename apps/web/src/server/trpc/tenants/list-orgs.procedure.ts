import { listMemberships } from "../engine-views.ts";
import { authedProcedure } from "../init.ts";

/** The orgs the signed-in user belongs to (org switcher, org picker). */
export const listOrgs = authedProcedure.query(({ ctx }) => listMemberships(ctx.db, { userId: ctx.user.id }));
