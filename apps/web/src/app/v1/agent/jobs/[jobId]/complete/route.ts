import { AGENT_ENDPOINTS, DomainError } from "@kiln/domain";
import { authenticateJobToken, completeAttempt, observeAttemptPhases } from "@kiln/engine";
import { services } from "@/server/context.ts";
import { machineJson, route } from "@/server/http/route.ts";

export const dynamic = "force-dynamic";

export const POST = route({
  path: AGENT_ENDPOINTS.complete.path,
  summary: "Report the attempt's outcome (fenced by epoch)",
  auth: AGENT_ENDPOINTS.complete.auth,
  responses: { 200: { description: "accepted", schema: AGENT_ENDPOINTS.complete.response } },
  body: AGENT_ENDPOINTS.complete.request,
  uuidParams: ["jobId"],
  handler: async ({ req, params, body }) => {
    const { db, cfg } = services();
    const claims = await authenticateJobToken(db, req.headers.get("authorization"), params.jobId ?? "");
    const r = await completeAttempt(db, cfg, {
      attemptId: claims.attemptId,
      jobId: claims.jobId,
      epoch: body.epoch === claims.epoch ? body.epoch : -1,
      outcome: body.outcome,
      cause: body.cause ?? null,
      message: body.message ?? null,
      exitCode: body.exit_code ?? null,
      sandboxDestroyed: body.sandbox_destroyed,
      phases: {
        ...(body.phases?.image_ms !== undefined ? { imageMs: body.phases.image_ms } : {}),
        ...(body.phases?.dispatch_ms !== undefined ? { dispatchMs: body.phases.dispatch_ms } : {}),
        ...(body.phases?.execution_ms !== undefined ? { executionMs: body.phases.execution_ms } : {}),
        ...(body.phases?.finalize_ms !== undefined ? { finalizeMs: body.phases.finalize_ms } : {}),
      },
    });
    if (!r.accepted) {
      // Cancel committed first. An agent that itself reports "cancelled" agrees with that.
      if (body.outcome === "cancelled") return machineJson(200, { accepted: true, job_outcome: "cancelled" });
      throw new DomainError("RUN.CANCELLED", "the run was cancelled before this completion; nothing was published");
    }
    observeAttemptPhases({
      image: body.phases?.image_ms,
      dispatch: body.phases?.dispatch_ms,
      execution: body.phases?.execution_ms,
      finalize: body.phases?.finalize_ms,
    });
    return machineJson(200, { accepted: true, job_outcome: r.jobOutcome });
  },
});
