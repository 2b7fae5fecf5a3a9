import { allowEgressHost as allowEgressHostUseCase } from "@kiln/engine";
import { z } from "zod";
import { adminProcedure } from "../init.ts";

// Only a length bound here: the domain's host-pattern parser owns the rules and their messages
// (REQUEST.INVALID, a BAD_REQUEST), the same for the CLI and this page.
export const egressHostInput = z.object({
  pattern: z.string().trim().min(1, "enter a host name or pattern").max(300, "must be at most 300 characters"),
});

/** Adds an allow-list entry (audited; allowing an existing entry changes and records nothing). */
export const allowEgressHost = adminProcedure.input(egressHostInput).mutation(({ ctx, input }) =>
  allowEgressHostUseCase(ctx.db, {
    orgSlug: ctx.tenant.slug,
    pattern: input.pattern,
    actor: `web:${ctx.tenant.login}`,
  }),
);
