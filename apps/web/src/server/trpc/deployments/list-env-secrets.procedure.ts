import { listEnvironmentSecrets } from "@kiln/engine";
import { readProcedure } from "../init.ts";
import { envInput, sessionCaller } from "./deploy-input.ts";

/** The environment's secrets: names and versions, never values. */
export const listEnvSecrets = readProcedure
  .input(envInput)
  .query(({ ctx, input }) => listEnvironmentSecrets(ctx.db, sessionCaller(ctx.tenant), input.environmentId));
