import { minuteQuotaStatus } from "@kiln/engine";
import { readProcedure } from "../init.ts";

/** The org's minute quota this month, for the dashboard's 80% / 100% banner (docs/adr/0045). */
export const getQuota = readProcedure.query(({ ctx }) => minuteQuotaStatus(ctx.db, ctx.tenant.orgId));
