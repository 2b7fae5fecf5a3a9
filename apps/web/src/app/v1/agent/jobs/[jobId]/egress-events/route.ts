import { AGENT_ENDPOINTS } from "@kiln/domain";
import { authenticateJobToken, recordEgressEvents } from "@kiln/engine";
import { services } from "@/server/context.ts";
import { machineJson, route } from "@/server/http/route.ts";

export const dynamic = "force-dynamic";

/** The host proxy's egress decisions for one attempt (docs/adr/0013-mediated-egress.md). */
export const POST = route({
  path: AGENT_ENDPOINTS.reportEgressEvents.path,
  summary: "The host proxy's egress decisions for the attempt",
  auth: AGENT_ENDPOINTS.reportEgressEvents.auth,
  responses: { 200: { description: "recorded", schema: AGENT_ENDPOINTS.reportEgressEvents.response } },
  body: AGENT_ENDPOINTS.reportEgressEvents.request,
  uuidParams: ["jobId"],
  maxBytes: 256 * 1024,
  handler: async ({ req, params, body }) => {
    const { db } = services();
    const claims = await authenticateJobToken(db, req.headers.get("authorization"), params.jobId ?? "");
    return machineJson(200, await recordEgressEvents(db, claims, body));
  },
});
