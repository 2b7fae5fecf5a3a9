import { DomainError } from "@kiln/domain";
import { authenticateApiToken, cancelRun } from "@kiln/engine";
import { services } from "@/server/context.ts";
import { json, route } from "@/server/http/route.ts";
import { runCancelled } from "@/server/http/schemas/runs.ts";

export const dynamic = "force-dynamic";

export const POST = route({
  path: "/v1/workflow-runs/{run_id}/cancel",
  summary: "Cancel a run (it stays cancelling until every attempt stopped)",
  auth: "api_token",
  responses: { 202: { description: "cancellation requested", schema: runCancelled } },
  uuidParams: ["runId"],
  handler: async ({ req, params }) => {
    const { db } = services();
    const caller = await authenticateApiToken(db, req.headers.get("authorization"));
    if (caller.role === "auditor") throw new DomainError("AUTH.FORBIDDEN", "auditors cannot cancel runs");
    const r = await cancelRun(db, {
      runId: params.runId ?? "",
      orgId: caller.orgId,
      actor: caller.name,
      retention: services().retention,
    });
    return json(202, { run_id: params.runId, status: r.status, cancel_version: r.cancelVersion });
  },
});
