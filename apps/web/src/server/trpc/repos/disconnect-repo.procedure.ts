import { disconnectRepo as disconnectRepoUseCase } from "@kiln/engine";
import { z } from "zod";
import { adminProcedure } from "../init.ts";

/** Soft-disables a repo: no new runs, history kept (docs/adr/0029); another org's id is NOT_FOUND. */
export const disconnectRepo = adminProcedure
  .input(z.object({ repoId: z.uuid("not a repo id") }))
  .mutation(({ ctx, input }) =>
    disconnectRepoUseCase(ctx.db, {
      orgSlug: ctx.tenant.slug,
      repo: { id: input.repoId },
      actor: `web:${ctx.tenant.login}`,
    }),
  );
