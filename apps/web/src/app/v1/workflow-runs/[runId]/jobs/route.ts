import { authenticateApiToken, getRun } from "@kiln/engine";
import { services } from "@/server/context.ts";
import { json, route } from "@/server/http/route.ts";
import { jobList } from "@/server/http/schemas/runs.ts";

export const dynamic = "force-dynamic";

export const GET = route({
  path: "/v1/workflow-runs/{run_id}/jobs",
  summary: "The run's jobs in order, each with its attempts, outcome, cause and queue position",
  auth: "api_token",
  uuidParams: ["runId"],
  responses: { 200: { description: "the jobs", schema: jobList } },
  handler: async ({ req, params }) => {
    const { db, cfg } = services();
    const caller = await authenticateApiToken(db, req.headers.get("authorization"));
    const run = await getRun(db, { orgId: caller.orgId, runId: params.runId ?? "", cfg });
    return json(200, { run_id: run.id, jobs: run.jobs });
  },
});
