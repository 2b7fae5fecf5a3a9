import { AGENT_ENDPOINTS, DomainError } from "@kiln/domain";
import { registerRunner } from "@kiln/engine";
import { services } from "@/server/context.ts";
import { machineJson, route } from "@/server/http/route.ts";

export const dynamic = "force-dynamic";

/**
 * `npm run agent -- register`: a registration token (Bearer) is spent for a host credential bound
 * to the token's org and pool. A spent, expired or unknown token is 401 with the reason.
 */
export const POST = route({
  path: AGENT_ENDPOINTS.register.path,
  summary: "Exchange a registration token (spent once) for a host credential in the token's org and pool",
  auth: AGENT_ENDPOINTS.register.auth,
  body: AGENT_ENDPOINTS.register.request,
  responses: { 201: { description: "the host credential, shown once", schema: AGENT_ENDPOINTS.register.response } },
  handler: async ({ req, body }) => {
    const { db } = services();
    const header = req.headers.get("authorization") ?? "";
    const token = header.startsWith("Bearer ") ? header.slice(7).trim() : "";
    if (!token) throw new DomainError("REGISTRATION.TOKEN_INVALID", "a registration token is required (Bearer)");
    const r = await registerRunner(db, {
      token,
      pool: body.pool,
      name: body.name,
      labels: body.labels,
      isolation: body.isolation,
      protocolVersion: body.protocol_version,
      agentVersion: body.agent_version,
    });
    return machineJson(201, {
      runner_id: r.runnerId,
      credential: r.credential,
      org: r.org,
      pool: r.pool,
      name: r.name,
      labels: r.labels,
      protocol_version: r.protocolVersion,
    });
  },
});
