import { getDeployConfig as getDeployConfigUseCase } from "@kiln/engine";
import { readProcedure } from "../init.ts";
import { envInput, sessionCaller } from "./deploy-input.ts";

/** The environment's deploy workflow, artifact path and variables (any member may read them). */
export const getDeployConfig = readProcedure
  .input(envInput)
  .query(({ ctx, input }) => getDeployConfigUseCase(ctx.db, sessionCaller(ctx.tenant), input.environmentId));
