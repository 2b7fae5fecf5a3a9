import { setSecret as setSecretUseCase, targetById } from "@kiln/engine";
import { services } from "../../context.ts";
import { adminProcedure } from "../init.ts";
import { setSecretInput } from "./secret-input.ts";

/** Sets a secret (a new version; audited). The value is write-only: the answer never carries it. */
export const setSecret = adminProcedure.input(setSecretInput).mutation(async ({ ctx, input }) => {
  const target = await targetById(ctx.db, ctx.tenant.orgId, input.repoId);
  return setSecretUseCase(ctx.db, services().keks, {
    target,
    name: input.name,
    value: input.value,
    actor: `web:${ctx.tenant.login}`,
  });
});
