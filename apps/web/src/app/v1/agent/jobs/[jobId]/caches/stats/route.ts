import { agentProtocol } from "@kiln/domain";
import { authenticateJobToken, recordCacheStats } from "@kiln/engine";
import { services } from "@/server/context.ts";
import { json, route } from "@/server/http/route.ts";

export const dynamic = "force-dynamic";

/** The attempt's cache figures (hit/miss, tier, bytes, times) for the run page. */
export const POST = route({
  path: "/v1/agent/jobs/{job_id}/caches/stats",
  summary: "The attempt's cache figures for the run page",
  auth: "job_token",
  responses: { 200: { description: "recorded", schema: agentProtocol.cacheStatsResponse } },
  body: agentProtocol.cacheStatsRequest,
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
