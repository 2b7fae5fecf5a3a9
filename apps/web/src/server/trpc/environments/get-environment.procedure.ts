import { getEnvironment as getEnv, getPolicyVersion, listEnvironmentPromotions, listPointerMoves } from "@kiln/engine";
import { z } from "zod";
import { readProcedure } from "../init.ts";
import { uuid } from "./env-procedure-support.ts";

/** The environment page: pointer, policy in force, deployment history (pointer moves) and promotions. */
export const getEnvironment = readProcedure.input(z.object({ environmentId: uuid })).query(async ({ ctx, input }) => {
  const environment = await getEnv(ctx.db, ctx.tenant.orgId, input.environmentId);
  const [policy, moves, promotions] = await Promise.all([
    getPolicyVersion(ctx.db, ctx.tenant.orgId, environment.id),
    listPointerMoves(ctx.db, ctx.tenant.orgId, environment.id),
    listEnvironmentPromotions(ctx.db, ctx.tenant.orgId, environment.id),
  ]);
  return { environment, policy, moves, promotions };
});
