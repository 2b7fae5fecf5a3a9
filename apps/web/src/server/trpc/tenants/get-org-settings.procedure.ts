import { getOrgSettings as getOrgSettingsView } from "../engine-views.ts";
import { readProcedure } from "../init.ts";

/**
 * Capacity per pool, the egress allow-list and the recent audited changes. Every role may read:
 * members need to see why their jobs wait (the org's cap) or why a host is denied, and auditors
 * exist to read the audit trail. Nothing here is secret; only admins may change it.
 */
export const getOrgSettings = readProcedure.query(({ ctx }) => getOrgSettingsView(ctx.db, ctx.tenant));
