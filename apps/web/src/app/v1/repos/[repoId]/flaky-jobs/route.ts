import { authenticateApiToken, listFlakyJobs } from "@kiln/engine";
import { services } from "@/server/context.ts";
import { json, route } from "@/server/http/route.ts";
import { flakyJobs } from "@/server/http/schemas/runs.ts";

export const dynamic = "force-dynamic";

/** GET /v1/repos/{repo_id}/flaky-jobs (issue 20): jobs that passed and failed on one commit and definition. */
export const GET = route({
  path: "/v1/repos/{repo_id}/flaky-jobs",
  summary: "Jobs that both passed and failed at one commit and definition in the last 30 days (never quarantined)",
  auth: "api_token",
  responses: { 200: { description: "the flaky jobs", schema: flakyJobs } },
  uuidParams: ["repoId"],
  handler: async ({ req, params }) => {
    const { db } = services();
    const caller = await authenticateApiToken(db, req.headers.get("authorization"));
    return json(200, { flaky_jobs: await listFlakyJobs(db, { orgId: caller.orgId, repoId: params.repoId ?? "" }) });
  },
});
