import { setEntitlementAsPlatformAdmin } from "@kiln/engine";
import { z } from "zod";
import { authedProcedure } from "../init.ts";

const setEntitlementInput = z
  .object({
    org: z.string().regex(/^[a-z0-9][a-z0-9-]{0,62}$/, "not an org slug"),
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

/**
 * Platform admins only (shared capacity; docs/scheduling.md): the flag is checked by the use case in
 * its transaction, so an org admin (or anyone else) gets 403 ENTITLEMENT.PLATFORM_ADMIN_REQUIRED.
 * A platform admin need not be a member of the org. Audited like `kiln entitlement set`.
 */
export const setEntitlement = authedProcedure.input(setEntitlementInput).mutation(({ ctx, input }) =>
  setEntitlementAsPlatformAdmin(ctx.db, {
    userId: ctx.user.id,
    login: ctx.user.login,
    orgSlug: input.org,
    pool: input.pool,
    slots: input.slots,
    weight: input.weight,
    hardCap: input.hardCap,
  }),
);
