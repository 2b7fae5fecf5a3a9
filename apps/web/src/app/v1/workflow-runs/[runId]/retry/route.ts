import { authenticateApiToken, retryRun } from "@kiln/engine";
import { services } from "@/server/context.ts";
import { json, route } from "@/server/http/route.ts";
import { runRetried } from "@/server/http/schemas/runs.ts";

export const dynamic = "force-dynamic";

export const POST = route({
  path: "/v1/workflow-runs/{run_id}/retry",
  summary: "A new run of a finished run, with the same pinned definition",
  auth: "api_token",
  responses: { 202: { description: "the new run", schema: runRetried } },
  uuidParams: ["runId"],
  handler: async ({ req, params }) => {
    const { db } = services();
    const caller = await authenticateApiToken(db, req.headers.get("authorization"));
    const r = await retryRun(db, { caller, runId: params.runId ?? "" });
    return json(202, { run_id: r.runId, parent_run_id: params.runId });
  },
});
