import { listDeployments as listDeploymentsUseCase } from "@kiln/engine";
import { readProcedure } from "../init.ts";
import { envInput, sessionCaller } from "./deploy-input.ts";

/** The environment page's lock (holder and why) and deployment history. */
export const listDeployments = readProcedure
  .input(envInput)
  .query(({ ctx, input }) => listDeploymentsUseCase(ctx.db, sessionCaller(ctx.tenant), input.environmentId));
