import { createRegistrationToken as createRegistrationTokenUseCase } from "@kiln/engine";
import { REGISTRATION_TOKEN_TTL } from "@kiln/domain";
import { z } from "zod";
import { adminProcedure } from "../init.ts";

/** A registration token for one of the org's pools, shown once (admins; audited). */
export const createRegistrationToken = adminProcedure
  .input(
    z.object({
      pool: z.string().trim().min(1, "choose a pool").max(102),
      singleUse: z.boolean().default(true),
      expiresInMinutes: z.number().int().min(1).max(REGISTRATION_TOKEN_TTL.maxMinutes).optional(),
    }),
  )
  .mutation(({ ctx, input }) =>
    createRegistrationTokenUseCase(ctx.db, {
      orgId: ctx.tenant.orgId,
      pool: input.pool,
      singleUse: input.singleUse,
      ...(input.expiresInMinutes !== undefined ? { expiresInMinutes: input.expiresInMinutes } : {}),
      actor: `web:${ctx.tenant.login}`,
    }),
  );
