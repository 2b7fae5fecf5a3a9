import { authenticateApiToken, listRunEgress } from "@kiln/engine";
import { services } from "@/server/context.ts";
import { json, route } from "@/server/http/route.ts";
import { runEgress } from "@/server/http/schemas/runs.ts";

export const dynamic = "force-dynamic";

/** Every destination the run's sandboxes asked for, allowed or denied (scoped to the caller's org). */
export const GET = route({
  path: "/v1/workflow-runs/{run_id}/egress",
  summary: "Every egress destination the run's attempts asked for, allowed or denied, with the reason",
  auth: "api_token",
  responses: { 200: { description: "the decisions, oldest first", schema: runEgress } },
  uuidParams: ["runId"],
  handler: async ({ req, params }) => {
    const { db } = services();
    const caller = await authenticateApiToken(db, req.headers.get("authorization"));
    return json(200, await listRunEgress(db, { orgId: caller.orgId, runId: params.runId ?? "" }));
  },
});
