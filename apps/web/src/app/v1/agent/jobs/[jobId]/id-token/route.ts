import { AGENT_ENDPOINTS } from "@kiln/domain";
import { authenticateJobToken, mintIdToken } from "@kiln/engine";
import { services } from "@/server/context.ts";
import { machineJson, route } from "@/server/http/route.ts";

export const dynamic = "force-dynamic";

// A job's OIDC ID token (issue 16, ADR 0024), asked for by the host agent on a step's behalf after
// it checked the attempt's request token. 409 when the attempt is not current.
export const POST = route({
  path: AGENT_ENDPOINTS.mintIdToken.path,
  summary: "An ID token for a step of the attempt the job token names (the agent asks on the step's behalf)",
  auth: AGENT_ENDPOINTS.mintIdToken.auth,
  responses: { 200: { description: "the signed ID token", schema: AGENT_ENDPOINTS.mintIdToken.response } },
  body: AGENT_ENDPOINTS.mintIdToken.request,
  uuidParams: ["jobId"],
  maxBytes: 4096,
  handler: async ({ req, params, body }) => {
    const { db, identity } = services();
    const claims = await authenticateJobToken(db, req.headers.get("authorization"), params.jobId ?? "");
    const id = identity();
    const minted = await mintIdToken(
      db,
      { issuer: id.issuer, kek: await id.kek() },
      {
        jobId: claims.jobId,
        attemptId: claims.attemptId,
        // The token names an epoch; the body must agree (a token is never reusable for another epoch).
        epoch: body.epoch === claims.epoch ? body.epoch : -1,
        audience: body.audience,
      },
    );
    return machineJson(200, { value: minted.value, expires_at: minted.expiresAt });
  },
});
