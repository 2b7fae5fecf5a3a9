import { removeMember as removeMemberUseCase } from "@kiln/engine";
import { z } from "zod";
import { adminProcedure } from "../init.ts";

/** Removes a member (never the last admin); their next request is refused by the tenant query. */
export const removeMember = adminProcedure
  .input(z.object({ userId: z.uuid("not a member id") }))
  .mutation(({ ctx, input }) =>
    removeMemberUseCase(ctx.db, {
      orgSlug: ctx.tenant.slug,
      member: { userId: input.userId },
      actor: `web:${ctx.tenant.login}`,
    }),
  );
