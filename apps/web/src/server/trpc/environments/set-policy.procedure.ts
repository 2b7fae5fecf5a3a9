import { setEnvironmentPolicy } from "@kiln/engine";
import { z } from "zod";
import { sessionActor } from "../../environments.ts";
import { adminProcedure } from "../init.ts";
import { uuid } from "./env-procedure-support.ts";

/** Admins set a new gate policy version (validated by the use case: POLICY.INVALID with per-path problems). */
export const setPolicy = adminProcedure
  .input(
    z.object({
      environmentId: uuid,
      policy: z.record(z.string(), z.unknown()),
      comment: z.string().max(500).optional(),
    }),
  )
  .mutation(({ ctx, input }) =>
    setEnvironmentPolicy(ctx.db, sessionActor(ctx.tenant), {
      environmentId: input.environmentId,
      policy: input.policy,
      comment: input.comment ?? null,
    }),
  );
