import { listRunners as listRunnersUseCase } from "@kiln/engine";
import { services } from "../../context.ts";
import { adminProcedure } from "../init.ts";

/** The org's own hosts (issue 22): state, labels, slots, last heartbeat, quarantine reason (admins). */
export const listRunners = adminProcedure.query(({ ctx }) =>
  listRunnersUseCase(ctx.db, { orgId: ctx.tenant.orgId, leaseTtlMs: services().cfg.leaseTtlMs }),
);
