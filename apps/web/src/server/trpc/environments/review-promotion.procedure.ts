import { reviewPromotion as review } from "@kiln/engine";
import { APPROVAL_DECISIONS } from "@kiln/domain";
import { z } from "zod";
import { sessionActor } from "../../environments.ts";
import { operatorProcedure } from "../init.ts";
import { depsOf, uuid } from "./env-procedure-support.ts";

/** Approve or reject with a comment; separation of duties is enforced by the use case (FORBIDDEN). */
export const reviewPromotion = operatorProcedure
  .input(
    z.object({ promotionId: uuid, decision: z.enum(APPROVAL_DECISIONS), comment: z.string().max(2000).optional() }),
  )
  .mutation(({ ctx, input }) =>
    review(ctx.db, depsOf(ctx), sessionActor(ctx.tenant), {
      promotionId: input.promotionId,
      decision: input.decision,
      comment: input.comment ?? null,
    }),
  );
