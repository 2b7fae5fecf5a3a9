import { deleteSecret as deleteSecretUseCase, targetById } from "@kiln/engine";
import { adminProcedure } from "../init.ts";
import { secretRef } from "./secret-input.ts";

/** Deletes a secret (its ciphertext goes; audited). Another org's repo is REPO.NOT_FOUND. */
export const deleteSecret = adminProcedure.input(secretRef).mutation(async ({ ctx, input }) => {
  const target = await targetById(ctx.db, ctx.tenant.orgId, input.repoId);
  return deleteSecretUseCase(ctx.db, { target, name: input.name, actor: `web:${ctx.tenant.login}` });
});
