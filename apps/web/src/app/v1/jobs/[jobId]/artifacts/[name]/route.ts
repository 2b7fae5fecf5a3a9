import { DomainError } from "@kiln/domain";
import { authenticateApiToken, jobArtifactDownload } from "@kiln/engine";
import { services } from "@/server/context.ts";
import { artifactDownloadResponse, sealedArtifactBody } from "@/server/http/artifact-download.ts";
import { route } from "@/server/http/route.ts";
import { redirect } from "@/server/http/schemas/resources.ts";

export const dynamic = "force-dynamic";

const NAME = /^[A-Za-z0-9_.-]{1,100}$/;

/** GET /v1/jobs/{job_id}/artifacts/{name}: 302 to a short-lived presigned URL, or a sealed artifact streamed opened. */
export const GET = route({
  path: "/v1/jobs/{job_id}/artifacts/{name}",
  summary: "Download a job's artifact by name: a redirect to a short-lived presigned URL, or the bytes of a sealed one",
  description:
    "As GET /v1/artifacts/{artifact_id}/download: 302 for a plaintext artifact, 200 with the opened bytes and x-kiln-sha256 for one sealed under a crypto-shredding data key (ADR 0037), 410 SHRED.KEY_DESTROYED once that key is destroyed.",
  auth: "api_token",
  responses: {
    200: sealedArtifactBody,
    302: redirect,
  },
  uuidParams: ["jobId"],
  handler: async ({ req, params }) => {
    const { db, artifacts } = services();
    const caller = await authenticateApiToken(db, req.headers.get("authorization"));
    const name = params.name ?? "";
    if (!NAME.test(name)) throw new DomainError("ARTIFACT.NOT_FOUND", "artifact not found");
    const d = await jobArtifactDownload(db, artifacts(), { orgId: caller.orgId, jobId: params.jobId ?? "", name });
    return artifactDownloadResponse(d);
  },
});
