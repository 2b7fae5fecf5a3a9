import { authenticateApiToken, callerOrg, listRetentionHolds } from "@kiln/engine";
import { services } from "@/server/context.ts";
import { json, route } from "@/server/http/route.ts";
import { holdListQuery, retentionHoldList } from "@/server/http/schemas/retention.ts";

export const dynamic = "force-dynamic";

export const GET = route({
  path: "/v1/orgs/{org}/retention/holds",
  summary: "The org's retention holds, active first; admins and auditors",
  auth: "api_token",
  query: holdListQuery,
  responses: { 200: { description: "the holds", schema: retentionHoldList } },
  handler: async ({ req, params, query }) => {
    const { db } = services();
    const caller = await authenticateApiToken(db, req.headers.get("authorization"));
    const org = await callerOrg(db, caller, params.org ?? "", ["admin", "auditor"], "listing retention holds");
    const holds = await listRetentionHolds(
      db,
      { orgId: org.orgId, role: caller.role, actor: caller.name },
      { includeRemoved: query.include_removed === "true" },
    );
    return json(200, { holds });
  },
});
