import { requestRollback } from "@kiln/engine";
import { z } from "zod";
import { sessionActor } from "../../environments.ts";
import { operatorProcedure } from "../init.ts";
import { depsOf, uuid } from "./env-procedure-support.ts";

/** The rollback button: back to an artifact the environment ran before, through the gates. */
export const rollbackEnvironment = operatorProcedure
  .input(z.object({ environmentId: uuid, toArtifactId: uuid, reason: z.string().min(1).max(2000) }))
  .mutation(({ ctx, input }) => requestRollback(ctx.db, depsOf(ctx), sessionActor(ctx.tenant), input));
