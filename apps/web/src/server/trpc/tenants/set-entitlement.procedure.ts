import { setEntitlement as setEntitlementUseCase } from "@kiln/engine";
import { z } from "zod";
import { adminProcedure } from "../init.ts";

export const setEntitlementInput = z
  .object({
    pool: z.string().regex(/^[a-z0-9][a-z0-9-]{0,62}$/, "use lowercase letters, digits and dashes (up to 63)"),
    slots: z.number().int("must be a whole number").min(0, "must be 0 or more").max(10_000, "must be at most 10000"),
    weight: z.number().int("must be a whole number").min(1, "must be at least 1").max(1000, "must be at most 1000"),
    /** The org's hard concurrency cap in this pool; null = none beyond the pool's size. */
    hardCap: z.number().int("must be a whole number").max(100_000, "must be at most 100000").nullable().default(null),
  })
  // A cap below the owned slots would make part of the entitlement unusable.
  .refine((v) => v.hardCap === null || v.hardCap >= v.slots, {
    path: ["hardCap"],
    message: "must be at least the slots, or empty for no cap",
  });

/** The same use case as `kiln entitlement set`: upsert plus an entitlement_change row, one transaction. */
export const setEntitlement = adminProcedure
  .input(setEntitlementInput)
  .mutation(({ ctx, input }) =>
    setEntitlementUseCase(ctx.db, {
      orgSlug: ctx.tenant.slug,
      pool: input.pool,
      slots: input.slots,
      weight: input.weight,
      hardCap: input.hardCap,
      actor: `web:${ctx.tenant.login}`,
    }),
  );
