import { removeEgressHost as removeEgressHostUseCase } from "@kiln/engine";
import { adminProcedure } from "../init.ts";
import { egressHostInput } from "./allow-egress-host.procedure.ts";

/** Removes an allow-list entry (audited); one that is not listed is a BAD_REQUEST naming it. */
export const removeEgressHost = adminProcedure.input(egressHostInput).mutation(({ ctx, input }) =>
  removeEgressHostUseCase(ctx.db, {
    orgSlug: ctx.tenant.slug,
    pattern: input.pattern,
    actor: `web:${ctx.tenant.login}`,
  }),
);
