import { createEnvironment as create } from "@kiln/engine";
import { z } from "zod";
import { sessionActor } from "../../environments.ts";
import { adminProcedure } from "../init.ts";
import { uuid } from "./env-procedure-support.ts";

/** Admins create an environment (after another, or marked production) with the default policy. */
export const createEnvironment = adminProcedure
  .input(
    z.object({
      repoId: uuid,
      name: z.string().min(1).max(63),
      after: z.string().min(1).max(63).optional(),
      production: z.boolean().optional(),
    }),
  )
  .mutation(({ ctx, input }) =>
    create(ctx.db, sessionActor(ctx.tenant), {
      repoId: input.repoId,
      name: input.name,
      after: input.after ?? null,
      ...(input.production !== undefined ? { production: input.production } : {}),
    }),
  );
