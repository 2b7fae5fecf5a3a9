import { AGENT_ENDPOINTS } from "@kiln/domain";
import { authenticateJobToken, heartbeat } from "@kiln/engine";
import { services } from "@/server/context.ts";
import { machineJson, route } from "@/server/http/route.ts";

export const dynamic = "force-dynamic";

export const POST = route({
  path: AGENT_ENDPOINTS.heartbeat.path,
  summary: "Extend the attempt's lease; says whether cancel was requested",
  auth: AGENT_ENDPOINTS.heartbeat.auth,
  responses: { 200: { description: "the new lease", schema: AGENT_ENDPOINTS.heartbeat.response } },
  body: AGENT_ENDPOINTS.heartbeat.request,
  uuidParams: ["jobId"],
  handler: async ({ req, params, body }) => {
    const { db, cfg } = services();
    const claims = await authenticateJobToken(db, req.headers.get("authorization"), params.jobId ?? "");
    const phase = body.phase
      ? {
          ...(body.phase.image_ms !== undefined ? { imageMs: body.phase.image_ms } : {}),
          ...(body.phase.dispatch_ms !== undefined ? { dispatchMs: body.phase.dispatch_ms } : {}),
          ...(body.phase.started !== undefined ? { started: body.phase.started } : {}),
        }
      : undefined;
    // The token names an epoch; the body must agree (a token is never reusable for another epoch).
    const r = await heartbeat(db, cfg, {
      attemptId: claims.attemptId,
      jobId: claims.jobId,
      epoch: body.epoch === claims.epoch ? body.epoch : -1,
      ...(phase ? { phase } : {}),
    });
    return machineJson(200, { lease_expires_at: r.leaseExpiresAt, cancel_requested: r.cancelRequested });
  },
});
