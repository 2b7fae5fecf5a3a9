import { authenticateApiToken, listPools } from "@kiln/engine";
import { services } from "@/server/context.ts";
import { json, route } from "@/server/http/route.ts";
import { pools as poolsSchema } from "@/server/http/schemas/resources.ts";

export const dynamic = "force-dynamic";

/**
 * The pools the caller's org may be placed in (issue 15): configured shared pools, the pools it owns and
 * those it holds an entitlement in, each with its isolation class, tenancy and untrusted-run policy.
 * Another org's own pools are never listed (the org scope is in the query).
 */
export const GET = route({
  path: "/v1/pools",
  summary: "The pools the org's jobs may be placed in: minimum isolation, tenancy, where untrusted runs may run",
  auth: "api_token",
  responses: { 200: { description: "the pools", schema: poolsSchema } },
  handler: async ({ req }) => {
    const { db } = services();
    const caller = await authenticateApiToken(db, req.headers.get("authorization"));
    const pools = await listPools(db, caller.orgId);
    return json(200, {
      pools: pools.map((p) => ({
        name: p.name,
        min_isolation: p.policy.minIsolation,
        tenancy: p.policy.tenancy.kind === "org" ? "org" : "shared",
        owner_org: p.ownerOrg,
        development: p.policy.development,
        admits_untrusted: p.policy.admitsUntrusted,
        untrusted_on_process: p.policy.untrustedOnProcess,
        configured: p.configured,
      })),
    });
  },
});
