import { listPendingPromotions } from "@kiln/engine";
import { readProcedure } from "../init.ts";

/** The approvals inbox: the org's pending promotions with each gate's reason, oldest first. */
export const listApprovalsInbox = readProcedure.query(({ ctx }) => listPendingPromotions(ctx.db, ctx.tenant.orgId));
