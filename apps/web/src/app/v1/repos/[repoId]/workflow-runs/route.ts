import { admitManualRun, authenticateApiToken, manualTriggerBody } from "@kiln/engine";
import { services } from "@/server/context.ts";
import { json, route } from "@/server/http/route.ts";

export const dynamic = "force-dynamic";

export const POST = route({
  body: manualTriggerBody,
  uuidParams: ["repoId"],
  handler: async ({ req, params, body }) => {
    const { db } = services();
    const caller = await authenticateApiToken(db, req.headers.get("authorization"));
    const r = await admitManualRun(db, {
      caller,
      repoId: params.repoId ?? "",
      idempotencyKey: req.headers.get("idempotency-key"),
      body,
    });
    return json(202, { run_id: r.runId });
  },
});
