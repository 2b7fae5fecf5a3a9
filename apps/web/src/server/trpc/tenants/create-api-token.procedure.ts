import { createApiToken as createApiTokenUseCase } from "@kiln/engine";
import { ROLES } from "@kiln/domain";
import { z } from "zod";
import { adminProcedure } from "../init.ts";

const createApiTokenInput = z.object({
  name: z.string().trim().min(1, "enter a name").max(64, "at most 64 characters"),
  role: z.enum(ROLES),
  expiresInDays: z.number("enter a number of days").int("a whole number of days").min(1).max(366),
});

/** Creates a token and answers its secret once (only the hash is stored); audited. */
export const createApiToken = adminProcedure
  .input(createApiTokenInput)
  .mutation(({ ctx, input }) =>
    createApiTokenUseCase(ctx.db, { orgSlug: ctx.tenant.slug, ...input, actor: `web:${ctx.tenant.login}` }),
  );
