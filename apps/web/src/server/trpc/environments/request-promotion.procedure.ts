import { requestPromotion as request } from "@kiln/engine";
import { z } from "zod";
import { sessionActor } from "../../environments.ts";
import { operatorProcedure } from "../init.ts";
import { depsOf, uuid } from "./env-procedure-support.ts";

/** Request a promotion of one artifact (by id) to an environment; answers the decision. */
export const requestPromotion = operatorProcedure
  .input(z.object({ environmentId: uuid, artifactId: uuid, reason: z.string().min(1).max(2000) }))
  .mutation(({ ctx, input }) =>
    request(ctx.db, depsOf(ctx), sessionActor(ctx.tenant), {
      environmentId: input.environmentId,
      artifact: { artifactId: input.artifactId },
      reason: input.reason,
    }),
  );
