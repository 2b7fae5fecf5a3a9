import { AGENT_ENDPOINTS, DomainError } from "@kiln/domain";
import { authenticateJobToken, recordPart } from "@kiln/engine";
import { services } from "@/server/context.ts";
import { machineJson, route } from "@/server/http/route.ts";

export const dynamic = "force-dynamic";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Records one uploaded part (number, size, sha256, ETag) of the attempt's own session. */
export const POST = route({
  path: AGENT_ENDPOINTS.recordArtifactPart.path,
  summary: "Record one uploaded part",
  auth: AGENT_ENDPOINTS.recordArtifactPart.auth,
  responses: { 200: { description: "recorded", schema: AGENT_ENDPOINTS.recordArtifactPart.response } },
  body: AGENT_ENDPOINTS.recordArtifactPart.request,
  uuidParams: ["jobId"],
  handler: async ({ req, params, body }) => {
    const { db } = services();
    const claims = await authenticateJobToken(db, req.headers.get("authorization"), params.jobId ?? "");
    const generationId = params.generationId ?? "";
    if (!UUID.test(generationId)) throw new DomainError("ARTIFACT.UPLOAD_NOT_FOUND", "no such upload session");
    const epoch = body.epoch === claims.epoch ? body.epoch : -1;
    const r = await recordPart(db, { ...claims, epoch }, generationId, {
      partNumber: body.part_number,
      sizeBytes: body.size_bytes,
      sha256: body.sha256,
      etag: body.etag,
      md5: body.md5 ?? null,
      tries: body.tries,
    });
    return machineJson(200, { recorded: true, retry: r.retry });
  },
});
