import { authenticateApiToken, retryRun } from "@kiln/engine";
import { services } from "@/server/context.ts";
import { json, route } from "@/server/http/route.ts";

export const dynamic = "force-dynamic";

export const POST = route({
  uuidParams: ["runId"],
  handler: async ({ req, params }) => {
    const { db } = services();
    const caller = await authenticateApiToken(db, req.headers.get("authorization"));
    const r = await retryRun(db, { caller, runId: params.runId ?? "" });
    return json(202, { run_id: r.runId, parent_run_id: params.runId });
  },
});
