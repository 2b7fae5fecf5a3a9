import { revokeApiToken as revokeApiTokenUseCase } from "@kiln/engine";
import { z } from "zod";
import { adminProcedure } from "../init.ts";

/** Revokes one of the org's tokens; another org's id is NOT_FOUND (scoped in the update itself). */
export const revokeApiToken = adminProcedure
  .input(z.object({ tokenId: z.string().uuid("not a token id") }))
  .mutation(({ ctx, input }) =>
    revokeApiTokenUseCase(ctx.db, {
      orgSlug: ctx.tenant.slug,
      tokenId: input.tokenId,
      actor: `web:${ctx.tenant.login}`,
    }),
  );
