import { overridePromotion as override } from "@kiln/engine";
import { z } from "zod";
import { sessionActor } from "../../environments.ts";
import { adminProcedure } from "../init.ts";
import { depsOf, uuid } from "./env-procedure-support.ts";

/** Break glass: an admin overrides the failing overridable gates with a reason and an expiry. */
export const overridePromotion = adminProcedure
  .input(
    z.object({ promotionId: uuid, reason: z.string().min(1).max(2000), expiresAt: z.iso.datetime({ offset: true }) }),
  )
  .mutation(({ ctx, input }) =>
    override(ctx.db, depsOf(ctx), sessionActor(ctx.tenant), {
      promotionId: input.promotionId,
      reason: input.reason,
      expiresAt: new Date(input.expiresAt),
    }),
  );
