import { AGENT_ENDPOINTS } from "@kiln/domain";
import { authenticateJobToken, recordCacheStats } from "@kiln/engine";
import { services } from "@/server/context.ts";
import { json, route } from "@/server/http/route.ts";

export const dynamic = "force-dynamic";

/** The attempt's cache figures (hit/miss, tier, bytes, times) for the run page. */
export const POST = route({
  path: AGENT_ENDPOINTS.reportCacheStats.path,
  summary: "The attempt's cache figures for the run page",
  auth: AGENT_ENDPOINTS.reportCacheStats.auth,
  responses: { 200: { description: "recorded", schema: AGENT_ENDPOINTS.reportCacheStats.response } },
  body: AGENT_ENDPOINTS.reportCacheStats.request,
  uuidParams: ["jobId"],
  handler: async ({ req, params, body }) => {
    const { db } = services();
    const claims = await authenticateJobToken(db, req.headers.get("authorization"), params.jobId ?? "");
    const epoch = body.epoch === claims.epoch ? body.epoch : -1;
    await recordCacheStats(
      db,
      { ...claims, epoch },
      {
        ...(body.restore ? { restore: body.restore } : {}),
        ...(body.save ? { save: body.save } : {}),
      },
    );
    return json(200, { recorded: true });
  },
});
