import { authenticateApiToken, callerOrg, listRunners } from "@kiln/engine";
import { services } from "@/server/context.ts";
import { json, route } from "@/server/http/route.ts";
import { runnerJson, runners } from "@/server/http/schemas/runners.ts";

export const dynamic = "force-dynamic";

/** The org's own hosts (issue 22): the org is in the query, another org's hosts are never listed. */
export const GET = route({
  path: "/v1/orgs/{org}/runners",
  summary: "The org's self-hosted runners: pool, labels, isolation, state, last heartbeat, slots; admins",
  auth: "api_token",
  responses: { 200: { description: "the runners", schema: runners } },
  handler: async ({ req, params }) => {
    const { db, cfg } = services();
    const caller = await authenticateApiToken(db, req.headers.get("authorization"));
    const org = await callerOrg(db, caller, params.org ?? "", ["admin"], "managing runners");
    const rows = await listRunners(db, { orgId: org.orgId, leaseTtlMs: cfg.leaseTtlMs });
    return json(200, { runners: rows.map(runnerJson) });
  },
});
