import { authenticateApiToken, getRun } from "@kiln/engine";
import { services } from "@/server/context.ts";
import { json, route } from "@/server/http/route.ts";
import { run } from "@/server/http/schemas/runs.ts";

export const dynamic = "force-dynamic";

export const GET = route({
  path: "/v1/workflow-runs/{run_id}",
  summary: "A run: its jobs, attempts (epoch, outcome, cause, host, phase timings)",
  auth: "api_token",
  responses: { 200: { description: "the run", schema: run } },
  uuidParams: ["runId"],
  handler: async ({ req, params }) => {
    const { db } = services();
    const caller = await authenticateApiToken(db, req.headers.get("authorization"));
    return json(200, await getRun(db, { orgId: caller.orgId, runId: params.runId ?? "", cfg: services().cfg }));
  },
});
