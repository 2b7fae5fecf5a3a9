import { lowerOwnHardCap } from "@kiln/engine";
import { z } from "zod";
import { adminProcedure } from "../init.ts";

const lowerHardCapInput = z.object({
  pool: z.string().regex(/^[a-z0-9][a-z0-9-]{0,62}$/, "use lowercase letters, digits and dashes (up to 63)"),
  hardCap: z.number().int("must be a whole number").min(0, "must be 0 or more").max(100_000, "must be at most 100000"),
});

/** An org admin gives up capacity: only lower, only its own org (raising is refused with a 403 code). */
export const lowerHardCap = adminProcedure.input(lowerHardCapInput).mutation(({ ctx, input }) =>
  lowerOwnHardCap(ctx.db, {
    orgSlug: ctx.tenant.slug,
    pool: input.pool,
    hardCap: input.hardCap,
    actor: `web:${ctx.tenant.login}`,
  }),
);
