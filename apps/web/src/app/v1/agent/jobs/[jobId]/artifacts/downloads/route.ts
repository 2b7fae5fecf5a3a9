import { AGENT_ENDPOINTS } from "@kiln/domain";
import { authenticateJobToken, grantDownload, sealWire } from "@kiln/engine";
import { services } from "@/server/context.ts";
import { machineJson, route } from "@/server/http/route.ts";

export const dynamic = "force-dynamic";

/** A restore: the producer's bound generation in this run, as a short-lived URL plus its digest. */
export const POST = route({
  path: AGENT_ENDPOINTS.requestArtifactDownload.path,
  summary: "A restore: the producer's bound artifact as a short-lived URL and its digest",
  auth: AGENT_ENDPOINTS.requestArtifactDownload.auth,
  responses: { 200: { description: "the grant", schema: AGENT_ENDPOINTS.requestArtifactDownload.response } },
  body: AGENT_ENDPOINTS.requestArtifactDownload.request,
  uuidParams: ["jobId"],
  handler: async ({ req, params, body }) => {
    const { db, artifacts } = services();
    const claims = await authenticateJobToken(db, req.headers.get("authorization"), params.jobId ?? "");
    const epoch = body.epoch === claims.epoch ? body.epoch : -1;
    const g = await grantDownload(db, artifacts(), { ...claims, epoch }, { fromJob: body.from_job, name: body.name });
    return machineJson(200, {
      generation_id: g.generationId,
      producer_epoch: g.producerEpoch,
      size_bytes: g.sizeBytes,
      sha256: g.sha256,
      format: g.format,
      url: g.url,
      url_expires_at: g.urlExpiresAt,
      ...(g.seal ? { seal: sealWire(g.seal) } : {}),
    });
  },
});
