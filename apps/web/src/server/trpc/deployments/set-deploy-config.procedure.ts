import { deployConfigBody, setDeployConfig as setDeployConfigUseCase } from "@kiln/engine";
import { adminProcedure } from "../init.ts";
import { envInput, sessionCaller } from "./deploy-input.ts";

/** Sets the deploy workflow read at each promoted artifact's commit (admins; audited). */
export const setDeployConfig = adminProcedure
  .input(envInput.extend({ config: deployConfigBody }))
  .mutation(({ ctx, input }) =>
    setDeployConfigUseCase(ctx.db, sessionCaller(ctx.tenant), input.environmentId, input.config),
  );
