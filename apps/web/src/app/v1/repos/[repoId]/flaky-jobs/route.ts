import { authenticateApiToken, listFlakyJobs } from "@kiln/engine";
import { services } from "@/server/context.ts";
import { json, route } from "@/server/http/route.ts";

export const dynamic = "force-dynamic";

/** GET /v1/repos/{repo_id}/flaky-jobs (issue 20): jobs that passed and failed on one commit and definition. */
export const GET = route({
  uuidParams: ["repoId"],
  handler: async ({ req, params }) => {
    const { db } = services();
    const caller = await authenticateApiToken(db, req.headers.get("authorization"));
    return json(200, { flaky_jobs: await listFlakyJobs(db, { orgId: caller.orgId, repoId: params.repoId ?? "" }) });
  },
});
