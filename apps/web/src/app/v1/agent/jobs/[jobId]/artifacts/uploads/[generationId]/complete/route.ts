import { AGENT_ENDPOINTS, DomainError } from "@kiln/domain";
import { authenticateJobToken, finalizeUpload } from "@kiln/engine";
import { services } from "@/server/context.ts";
import { machineJson, route } from "@/server/http/route.ts";

export const dynamic = "force-dynamic";
// Read-back verification streams the whole object once (docs/adr/0007-artifacts.md).
export const maxDuration = 3600;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The idempotent finaliser: complete, verify size + sha256 by read-back, seal for this attempt. */
export const POST = route({
  path: AGENT_ENDPOINTS.completeArtifactUpload.path,
  summary: "Finalise an upload: verify size and sha256 by read-back, seal for this attempt",
  auth: AGENT_ENDPOINTS.completeArtifactUpload.auth,
  responses: { 200: { description: "sealed", schema: AGENT_ENDPOINTS.completeArtifactUpload.response } },
  body: AGENT_ENDPOINTS.completeArtifactUpload.request,
  uuidParams: ["jobId"],
  handler: async ({ req, params, body }) => {
    const { db, artifacts } = services();
    const claims = await authenticateJobToken(db, req.headers.get("authorization"), params.jobId ?? "");
    const generationId = params.generationId ?? "";
    if (!UUID.test(generationId)) throw new DomainError("ARTIFACT.UPLOAD_NOT_FOUND", "no such upload session");
    const epoch = body.epoch === claims.epoch ? body.epoch : -1;
    const s = await finalizeUpload(db, artifacts(), { ...claims, epoch }, generationId);
    return machineJson(200, {
      state: "sealed",
      generation_id: s.generationId,
      size_bytes: s.sizeBytes,
      sha256: s.sha256,
    });
  },
});
