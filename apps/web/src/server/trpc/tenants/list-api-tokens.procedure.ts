import { listApiTokens as listApiTokensUseCase } from "@kiln/engine";
import { adminProcedure } from "../init.ts";

/** The org's API tokens (never their secrets): admins only, refused in the tenant query itself. */
export const listApiTokens = adminProcedure.query(({ ctx }) =>
  listApiTokensUseCase(ctx.db, { orgSlug: ctx.tenant.slug }),
);
