import { agentProtocol } from "@kiln/domain";
import { authenticateJobToken, deliverSecrets } from "@kiln/engine";
import { services } from "@/server/context.ts";
import { machineJson, route } from "@/server/http/route.ts";

export const dynamic = "force-dynamic";

/**
 * The secret broker (ADR 0025): the job's declared secrets for a trusted run's current attempt.
 * deliverSecrets commits every value's audit record before it returns, so nothing is sent unrecorded.
 */
export const POST = route({
  body: agentProtocol.secretsRequest,
  uuidParams: ["jobId"],
  handler: async ({ req, params, body }) => {
    const { db, keks } = services();
    const claims = await authenticateJobToken(db, req.headers.get("authorization"), params.jobId ?? "");
    return machineJson(200, await deliverSecrets(db, keks, claims, body));
  },
});
