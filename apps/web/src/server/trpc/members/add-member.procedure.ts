import { addMember as addMemberUseCase } from "@kiln/engine";
import { ROLES } from "@kiln/domain";
import { z } from "zod";
import { adminProcedure } from "../init.ts";

const addMemberInput = z.object({
  login: z.string().trim().min(1, "enter the forge login").max(100),
  // Required: members are matched by the forge's numeric id, never by a re-registrable login.
  forgeId: z.number("enter the forge's numeric user id").int("a whole number").min(1, "a positive number"),
  role: z.enum(ROLES),
});

/** Adds a member by forge account (or re-roles one: never the last admin); audited. */
export const addMember = adminProcedure
  .input(addMemberInput)
  .mutation(({ ctx, input }) =>
    addMemberUseCase(ctx.db, { orgSlug: ctx.tenant.slug, ...input, actor: `web:${ctx.tenant.login}` }),
  );
