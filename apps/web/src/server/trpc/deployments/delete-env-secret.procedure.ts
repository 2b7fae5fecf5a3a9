import { deleteEnvironmentSecret } from "@kiln/engine";
import { z } from "zod";
import { adminProcedure } from "../init.ts";
import { envInput, sessionCaller } from "./deploy-input.ts";

/** Deletes an environment secret (admins; audited). */
export const deleteEnvSecret = adminProcedure
  .input(envInput.extend({ name: z.string().min(1) }))
  .mutation(({ ctx, input }) =>
    deleteEnvironmentSecret(ctx.db, sessionCaller(ctx.tenant), input.environmentId, input.name),
  );
