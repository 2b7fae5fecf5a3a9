import { AGENT_ENDPOINTS } from "@kiln/domain";
import { authenticateJobToken, openUpload, sealWire } from "@kiln/engine";
import { services } from "@/server/context.ts";
import { machineJson, route } from "@/server/http/route.ts";

export const dynamic = "force-dynamic";

/** Opens (or resumes) the attempt's upload session for one artifact; returns presigned part URLs. */
export const POST = route({
  path: AGENT_ENDPOINTS.openArtifactUpload.path,
  summary: "Open (or resume) an artifact upload session: presigned part URLs",
  auth: AGENT_ENDPOINTS.openArtifactUpload.auth,
  responses: { 200: { description: "the session", schema: AGENT_ENDPOINTS.openArtifactUpload.response } },
  body: AGENT_ENDPOINTS.openArtifactUpload.request,
  uuidParams: ["jobId"],
  handler: async ({ req, params, body }) => {
    const { db, artifacts } = services();
    const claims = await authenticateJobToken(db, req.headers.get("authorization"), params.jobId ?? "");
    const epoch = body.epoch === claims.epoch ? body.epoch : -1;
    const s = await openUpload(
      db,
      artifacts(),
      { ...claims, epoch },
      {
        name: body.name,
        sizeBytes: body.size_bytes,
        sha256: body.sha256,
        format: body.format,
        seal: body.seal === "kiln-shred-v1",
      },
    );
    return machineJson(200, {
      generation_id: s.generationId,
      state: s.state,
      size_bytes: s.sizeBytes,
      sha256: s.sha256,
      part_size: s.partSize,
      part_count: s.partCount,
      parts: s.parts.map((p) => ({
        part_number: p.partNumber,
        offset: p.offset,
        size: p.size,
        ...(p.sealedSize !== undefined ? { sealed_size: p.sealedSize } : {}),
        done: p.done,
        ...(p.url ? { url: p.url } : {}),
      })),
      urls_expire_at: s.urlsExpireAt,
      // The data key, to the attempt's host agent only (job token): it seals the parts it PUTs.
      ...(s.seal ? { seal: sealWire(s.seal) } : {}),
    });
  },
});
