import { listOrgPools as listOrgPoolsUseCase } from "@kiln/engine";
import { adminProcedure } from "../init.ts";

/** The org's own pools (<org>/<name>), for the registration form (admins). */
export const listOrgPools = adminProcedure.query(({ ctx }) => listOrgPoolsUseCase(ctx.db, { orgId: ctx.tenant.orgId }));
