import { deleteEnvironmentVariable } from "@kiln/engine";
import { z } from "zod";
import { adminProcedure } from "../init.ts";
import { envInput, sessionCaller } from "./deploy-input.ts";

/** Deletes a deploy-time variable (admins; audited). */
export const deleteVariable = adminProcedure
  .input(envInput.extend({ name: z.string().min(1) }))
  .mutation(async ({ ctx, input }) => {
    await deleteEnvironmentVariable(ctx.db, sessionCaller(ctx.tenant), input.environmentId, input.name);
    return { deleted: input.name };
  });
