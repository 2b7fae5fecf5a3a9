import { AGENT_ENDPOINTS } from "@kiln/domain";
import { authenticateJobToken, sealLog } from "@kiln/engine";
import { services } from "@/server/context.ts";
import { machineJson, route } from "@/server/http/route.ts";

export const dynamic = "force-dynamic";

/** The agent's end-of-log declaration; accepted only if the journal holds all of it. */
export const POST = route({
  path: AGENT_ENDPOINTS.sealLog.path,
  summary: "Declare the end of the attempt's log",
  auth: AGENT_ENDPOINTS.sealLog.auth,
  responses: { 200: { description: "sealed or truncated", schema: AGENT_ENDPOINTS.sealLog.response } },
  body: AGENT_ENDPOINTS.sealLog.request,
  uuidParams: ["jobId"],
  handler: async ({ req, params, body }) => {
    const { db } = services();
    const claims = await authenticateJobToken(db, req.headers.get("authorization"), params.jobId ?? "");
    const r = await sealLog(
      db,
      { jobId: claims.jobId, attemptId: claims.attemptId, epoch: body.epoch === claims.epoch ? body.epoch : -1 },
      {
        nextSeq: body.next_seq,
        bytes: body.bytes,
        dropped: body.dropped_bytes,
      },
    );
    services().logs().publisher.publish(claims.jobId, { kind: "state", epoch: claims.epoch, state: r.state });
    return machineJson(200, { state: r.state });
  },
});
