import { setEnvironmentVariable } from "@kiln/engine";
import { MAX_ENV_VARIABLE_BYTES } from "@kiln/domain";
import { z } from "zod";
import { adminProcedure } from "../init.ts";
import { envInput, sessionCaller } from "./deploy-input.ts";

/** Sets a deploy-time variable (admins; audited with its value: variables are not secrets). */
export const setVariable = adminProcedure
  .input(
    envInput.extend({ name: z.string().trim().min(1, "enter a name"), value: z.string().max(MAX_ENV_VARIABLE_BYTES) }),
  )
  .mutation(({ ctx, input }) =>
    setEnvironmentVariable(ctx.db, sessionCaller(ctx.tenant), input.environmentId, {
      name: input.name,
      value: input.value,
    }),
  );
