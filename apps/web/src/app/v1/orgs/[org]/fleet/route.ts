import { authenticateApiToken, callerOrg, listFleet } from "@kiln/engine";
import { services } from "@/server/context.ts";
import { json, route } from "@/server/http/route.ts";
import { fleet, fleetHostWire } from "@/server/http/schemas/fleet.ts";

export const dynamic = "force-dynamic";

/** The fleet view of the org's hosts with their agents' stats (issue 22, ADR 0035); admins. */
export const GET = route({
  path: "/v1/orgs/{org}/fleet",
  summary:
    "The org's hosts: state, heartbeat, slots, running jobs, agent version, warm pool, platform failures and reclaims in the last hour",
  auth: "api_token",
  responses: { 200: { description: "the hosts", schema: fleet } },
  handler: async ({ req, params }) => {
    const { db, cfg } = services();
    const caller = await authenticateApiToken(db, req.headers.get("authorization"));
    const org = await callerOrg(db, caller, params.org ?? "", ["admin"], "reading the fleet");
    const hosts = await listFleet(db, { orgId: org.orgId, leaseTtlMs: cfg.leaseTtlMs });
    return json(200, { hosts: hosts.map(fleetHostWire) });
  },
});
