import { applyRunnerAction } from "@kiln/engine";
import { z } from "zod";
import { services } from "../../context.ts";
import { adminProcedure } from "../init.ts";
import { fleetOrgScope } from "./fleet-scope.ts";

/** Drain, quarantine (with a reason), revoke, or lift them, from the fleet page; runners-reg's use case, audited. */
export const fleetAction = adminProcedure
  .input(
    z.object({
      all: z.boolean().optional(),
      runnerId: z.uuid("not a runner id"),
      action: z.enum(["drain", "undrain", "quarantine", "unquarantine", "revoke"]),
      reason: z.string().trim().max(500, "at most 500 characters").optional(),
    }),
  )
  .mutation(async ({ ctx, input }) =>
    applyRunnerAction(ctx.db, {
      orgId: await fleetOrgScope(ctx.db, input, { userId: ctx.user.id, orgId: ctx.tenant.orgId }),
      runnerId: input.runnerId,
      action: input.action,
      ...(input.reason ? { reason: input.reason } : {}),
      actor: `web:${ctx.tenant.login}`,
      leaseTtlMs: services().cfg.leaseTtlMs,
    }),
  );
