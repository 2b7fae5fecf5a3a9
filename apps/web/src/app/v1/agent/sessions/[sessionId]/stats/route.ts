import { AGENT_ENDPOINTS, DomainError } from "@kiln/domain";
import { authenticateAgentToken, recordSessionStats } from "@kiln/engine";
import { services } from "@/server/context.ts";
import { machineJson, route } from "@/server/http/route.ts";

export const dynamic = "force-dynamic";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Fleet stats (issue 22, ADR 0035): stored on the session; the answer carries a reclaim notice. */
export const POST = route({
  path: AGENT_ENDPOINTS.sessionStats.path,
  summary: "Report the agent's fleet stats (version, warm pool, slots); says whether a reclaim was requested",
  auth: AGENT_ENDPOINTS.sessionStats.auth,
  responses: { 200: { description: "recorded", schema: AGENT_ENDPOINTS.sessionStats.response } },
  body: AGENT_ENDPOINTS.sessionStats.request,
  handler: async ({ req, params, body }) => {
    const { db } = services();
    const sessionId = params.sessionId ?? "";
    if (!UUID.test(sessionId)) throw new DomainError("SESSION.NOT_FOUND", "unknown agent session; register again");
    const agent = await authenticateAgentToken(db, req.headers.get("authorization"), sessionId);
    const r = await recordSessionStats(db, {
      sessionId,
      agentTokenId: agent.id,
      stats: {
        agentVersion: body.agent_version,
        warmPool: body.warm_pool,
        slots: { inUse: body.slots.in_use, total: body.slots.total },
        ...(body.ending ? { ending: true } : {}),
      },
    });
    return machineJson(200, { recorded: true, reclaim_requested: r.reclaimRequested });
  },
});
