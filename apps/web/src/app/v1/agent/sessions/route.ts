import { AGENT_ENDPOINTS } from "@kiln/domain";
import { authenticateAgentToken, registerSession } from "@kiln/engine";
import { services } from "@/server/context.ts";
import { machineJson, route } from "@/server/http/route.ts";

export const dynamic = "force-dynamic";

export const POST = route({
  path: AGENT_ENDPOINTS.registerSession.path,
  summary: "Register an agent session (pool, labels, capacity)",
  auth: AGENT_ENDPOINTS.registerSession.auth,
  responses: { 201: { description: "the session", schema: AGENT_ENDPOINTS.registerSession.response } },
  body: AGENT_ENDPOINTS.registerSession.request,
  handler: async ({ req, body }) => {
    const { db, cfg, registries } = services();
    const agent = await authenticateAgentToken(db, req.headers.get("authorization"));
    const s = await registerSession(db, cfg, { agentTokenId: agent.id, pool: agent.pool, body, registries });
    return machineJson(201, {
      session_id: s.sessionId,
      pool: s.pool,
      lease_ttl_ms: s.leaseTtlMs,
      heartbeat_ms: s.heartbeatMs,
      runner_id: s.runnerId,
      protocol_version: s.protocolVersion,
      registries: s.registries,
    });
  },
});
