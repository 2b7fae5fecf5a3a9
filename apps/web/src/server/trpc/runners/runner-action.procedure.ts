import { applyRunnerAction } from "@kiln/engine";
import { z } from "zod";
import { services } from "../../context.ts";
import { adminProcedure } from "../init.ts";

/** Drain, undrain, quarantine (with a reason), unquarantine or revoke one of the org's hosts; audited. */
export const runnerAction = adminProcedure
  .input(
    z.object({
      runnerId: z.uuid("not a runner id"),
      action: z.enum(["drain", "undrain", "quarantine", "unquarantine", "revoke"]),
      reason: z.string().trim().max(500, "at most 500 characters").optional(),
    }),
  )
  .mutation(({ ctx, input }) =>
    applyRunnerAction(ctx.db, {
      orgId: ctx.tenant.orgId,
      runnerId: input.runnerId,
      action: input.action,
      ...(input.reason ? { reason: input.reason } : {}),
      actor: `web:${ctx.tenant.login}`,
      leaseTtlMs: services().cfg.leaseTtlMs,
    }),
  );
