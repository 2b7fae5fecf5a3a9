import { authenticateApiToken, listJobArtifacts } from "@kiln/engine";
import { services } from "@/server/context.ts";
import { json, route } from "@/server/http/route.ts";
import { jobArtifacts } from "@/server/http/schemas/resources.ts";

export const dynamic = "force-dynamic";

/** GET /v1/jobs/{job_id}/artifacts: the job's bound artifacts; another org's job is a 404. */
export const GET = route({
  path: "/v1/jobs/{job_id}/artifacts",
  summary: "The job's bound artifacts (id, name, size, sha256, attempt)",
  auth: "api_token",
  responses: { 200: { description: "the artifacts", schema: jobArtifacts } },
  uuidParams: ["jobId"],
  handler: async ({ req, params }) => {
    const { db } = services();
    const caller = await authenticateApiToken(db, req.headers.get("authorization"));
    return json(200, { artifacts: await listJobArtifacts(db, { orgId: caller.orgId, jobId: params.jobId ?? "" }) });
  },
});
