import { AGENT_ENDPOINTS } from "@kiln/domain";
import { authenticateJobToken, issueSourceCredential } from "@kiln/engine";
import { services } from "@/server/context.ts";
import { webForgeConfig } from "@/server/env.ts";
import { machineJson, route } from "@/server/http/route.ts";

export const dynamic = "force-dynamic";

/**
 * Private checkouts (issue 28, docs/adr/0028 amended): the repo's forge credential for the agent's
 * own git fetch, for the current attempt only, and only for a clone URL on the forge's own host.
 */
export const POST = route({
  path: AGENT_ENDPOINTS.fetchSourceCredential.path,
  summary: "The repo's forge credential for the agent's checkout of a current attempt (never a step's)",
  auth: AGENT_ENDPOINTS.fetchSourceCredential.auth,
  responses: {
    200: { description: "the credential, or null and why", schema: AGENT_ENDPOINTS.fetchSourceCredential.response },
  },
  body: AGENT_ENDPOINTS.fetchSourceCredential.request,
  uuidParams: ["jobId"],
  maxBytes: 1024,
  handler: async ({ req, params, body }) => {
    const { db } = services();
    const claims = await authenticateJobToken(db, req.headers.get("authorization"), params.jobId ?? "");
    return machineJson(200, await issueSourceCredential(db, webForgeConfig(), claims, body));
  },
});
