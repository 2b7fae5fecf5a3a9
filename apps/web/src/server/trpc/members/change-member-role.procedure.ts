import { changeMemberRole as changeMemberRoleUseCase } from "@kiln/engine";
import { ROLES } from "@kiln/domain";
import { z } from "zod";
import { adminProcedure } from "../init.ts";

/** Changes a member's role; MEMBER.LAST_ADMIN (CONFLICT) when it would leave the org without an admin. */
export const changeMemberRole = adminProcedure
  .input(z.object({ userId: z.uuid("not a member id"), role: z.enum(ROLES) }))
  .mutation(({ ctx, input }) =>
    changeMemberRoleUseCase(ctx.db, {
      orgSlug: ctx.tenant.slug,
      member: { userId: input.userId },
      role: input.role,
      actor: `web:${ctx.tenant.login}`,
    }),
  );
