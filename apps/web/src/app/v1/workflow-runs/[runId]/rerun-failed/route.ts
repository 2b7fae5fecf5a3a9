import { authenticateApiToken, rerunFailedJobs } from "@kiln/engine";
import { services } from "@/server/context.ts";
import { json, route } from "@/server/http/route.ts";

export const dynamic = "force-dynamic";

/**
 * POST /v1/workflow-runs/{run_id}/rerun-failed (issue 20): a new run that pins the parent's
 * successful jobs and runs the failed ones with their descendants. Like /retry, no idempotency key:
 * each call is a new run, and the parent link shows them all.
 */
export const POST = route({
  uuidParams: ["runId"],
  handler: async ({ req, params }) => {
    const { db } = services();
    const caller = await authenticateApiToken(db, req.headers.get("authorization"));
    const r = await rerunFailedJobs(db, { caller, runId: params.runId ?? "" });
    return json(202, {
      run_id: r.runId,
      parent_run_id: r.parentRunId,
      pinned: r.pinned.map((p) => ({
        name: p.name,
        reused_from: { run_id: p.reusedFrom.runId, job_id: p.reusedFrom.jobId },
      })),
      rerun: r.rerun.map((j) => j.name),
    });
  },
});
