import { listFleet as listFleetUseCase } from "@kiln/engine";
import { z } from "zod";
import { services } from "../../context.ts";
import { adminProcedure } from "../init.ts";
import { fleetOrgScope } from "./fleet-scope.ts";

/** The fleet view: the org's hosts, or every host for an operator (`all`), with their agents' stats. */
export const listFleet = adminProcedure.input(z.object({ all: z.boolean().optional() })).query(async ({ ctx, input }) =>
  listFleetUseCase(ctx.db, {
    orgId: await fleetOrgScope(ctx.db, input, { userId: ctx.user.id, orgId: ctx.tenant.orgId }),
    leaseTtlMs: services().cfg.leaseTtlMs,
  }),
);
