import { DomainError } from "@kiln/domain";
import { artifactDownloadUrl, authenticateApiToken } from "@kiln/engine";
import { services } from "@/server/context.ts";
import { route } from "@/server/http/route.ts";
import { redirect } from "@/server/http/schemas/resources.ts";

export const dynamic = "force-dynamic";

const NAME = /^[A-Za-z0-9_.-]{1,100}$/;

/** GET /v1/jobs/{job_id}/artifacts/{name}: 302 to a short-lived presigned URL of the bound bytes. */
export const GET = route({
  path: "/v1/jobs/{job_id}/artifacts/{name}",
  summary: "Download a job's artifact by name: a redirect to a short-lived presigned URL",
  auth: "api_token",
  responses: { 302: redirect },
  uuidParams: ["jobId"],
  handler: async ({ req, params }) => {
    const { db, artifacts } = services();
    const caller = await authenticateApiToken(db, req.headers.get("authorization"));
    const name = params.name ?? "";
    if (!NAME.test(name)) throw new DomainError("ARTIFACT.NOT_FOUND", "artifact not found");
    const url = await artifactDownloadUrl(db, artifacts(), { orgId: caller.orgId, jobId: params.jobId ?? "", name });
    return new Response(null, { status: 302, headers: { location: url, "cache-control": "no-store" } });
  },
});
