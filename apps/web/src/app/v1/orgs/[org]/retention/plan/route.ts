import { authenticateApiToken, callerOrg, planRetentionPass } from "@kiln/engine";
import { services } from "@/server/context.ts";
import { json, route } from "@/server/http/route.ts";
import { planQuery, retentionPlan } from "@/server/http/schemas/retention.ts";

export const dynamic = "force-dynamic";

/** What the retention worker would evict in this org at `at`, and why; changes nothing. */
export const GET = route({
  path: "/v1/orgs/{org}/retention/plan",
  summary: "What retention would evict in the org at a date, and what it keeps and why; admins and auditors",
  description: "Computed by the worker's own code on a transaction that is rolled back.",
  auth: "api_token",
  query: planQuery,
  responses: { 200: { description: "the plan", schema: retentionPlan } },
  handler: async ({ req, params, query }) => {
    const { db, retention } = services();
    const caller = await authenticateApiToken(db, req.headers.get("authorization"));
    const org = await callerOrg(db, caller, params.org ?? "", ["admin", "auditor"], "reading the retention plan");
    const at = query.at ? new Date(query.at) : new Date();
    return json(200, await planRetentionPass(db, { at, windows: retention, orgId: org.orgId }));
  },
});
