import { createOrgPool as createOrgPoolUseCase } from "@kiln/engine";
import { ISOLATION_CLASSES } from "@kiln/domain";
import { z } from "zod";
import { adminProcedure } from "../init.ts";

/** Creates the org pool <org>/<name> for the org's own hosts (admins; audited). */
export const createOrgPool = adminProcedure
  .input(
    z.object({
      name: z
        .string()
        .trim()
        .regex(/^[a-z0-9][a-z0-9_.-]{0,62}$/, "1-63 characters from a-z 0-9 . _ -"),
      isolation: z.enum(ISOLATION_CLASSES),
    }),
  )
  .mutation(({ ctx, input }) =>
    createOrgPoolUseCase(ctx.db, { orgId: ctx.tenant.orgId, ...input, actor: `web:${ctx.tenant.login}` }),
  );
