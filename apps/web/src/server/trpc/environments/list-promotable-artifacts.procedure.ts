import { listPromotableArtifacts as list, PROMOTABLE_LIMIT_MAX } from "@kiln/engine";
import { z } from "zod";
import { readProcedure } from "../init.ts";
import { uuid } from "./env-procedure-support.ts";

/** The promotion form's choices: the environment's repo's recent attested artifacts (issue 29). */
export const listPromotableArtifacts = readProcedure
  .input(z.object({ environmentId: uuid, limit: z.number().int().min(1).max(PROMOTABLE_LIMIT_MAX).optional() }))
  .query(({ ctx, input }) => list(ctx.db, ctx.tenant.orgId, input.environmentId, { limit: input.limit }));
