import { getPromotion as getOne } from "@kiln/engine";
import { z } from "zod";
import { readProcedure } from "../init.ts";
import { uuid } from "./env-procedure-support.ts";

/** A promotion: the decision with each gate's reason, approvals and overrides. */
export const getPromotion = readProcedure
  .input(z.object({ promotionId: uuid }))
  .query(({ ctx, input }) => getOne(ctx.db, ctx.tenant.orgId, input.promotionId));
