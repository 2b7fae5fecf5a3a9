import { listPools as listPoolsView } from "../engine-views.ts";
import { readProcedure } from "../init.ts";

/**
 * The pools this org may be placed in, with each one's isolation class, tenancy and untrusted-run
 * policy (issue 15): a member whose job waits "for a VM-isolated host" can see why. Operators set
 * them with `npm run kiln -- pool set`; the org scope is in the query (another org's own pools never appear).
 */
export const listPools = readProcedure.query(async ({ ctx }) =>
  (await listPoolsView(ctx.db, ctx.tenant.orgId)).map((p) => ({
    name: p.name,
    minIsolation: p.policy.minIsolation,
    tenancy: p.policy.tenancy.kind,
    ownerOrg: p.ownerOrg,
    development: p.policy.development,
    admitsUntrusted: p.policy.admitsUntrusted,
    untrustedOnProcess: p.policy.untrustedOnProcess,
    configured: p.configured,
  })),
);
