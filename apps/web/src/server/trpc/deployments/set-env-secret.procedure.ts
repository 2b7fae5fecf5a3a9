import { setEnvironmentSecret } from "@kiln/engine";
import { MAX_SECRET_VALUE_BYTES, SECRET_NAME_PATTERN } from "@kiln/domain";
import { z } from "zod";
import { services } from "../../context.ts";
import { adminProcedure } from "../init.ts";
import { envInput, sessionCaller } from "./deploy-input.ts";

/** Sets an environment secret (write-only; only that environment's deploy runs receive it). */
export const setEnvSecret = adminProcedure
  .input(
    envInput.extend({
      name: z.string().trim().regex(SECRET_NAME_PATTERN, "letters, digits and _, not starting with a digit"),
      value: z.string().min(1, "enter a value").max(MAX_SECRET_VALUE_BYTES),
    }),
  )
  .mutation(({ ctx, input }) =>
    setEnvironmentSecret(ctx.db, services().keks, sessionCaller(ctx.tenant), input.environmentId, {
      name: input.name,
      value: input.value,
    }),
  );
