import { authenticateApiToken, getRun } from "@kiln/engine";
import { services } from "@/server/context.ts";
import { json, route } from "@/server/http/route.ts";

export const dynamic = "force-dynamic";

export const GET = route({
  uuidParams: ["runId"],
  handler: async ({ req, params }) => {
    const { db } = services();
    const caller = await authenticateApiToken(db, req.headers.get("authorization"));
    return json(200, await getRun(db, { orgId: caller.orgId, runId: params.runId ?? "", cfg: services().cfg }));
  },
});
