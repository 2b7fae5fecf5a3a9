import { AGENT_ENDPOINTS } from "@kiln/domain";
import {
  agentCredentialHash,
  authenticateAgentToken,
  claimJob,
  observeClaim,
  type DispatchPayload,
} from "@kiln/engine";
import { services } from "@/server/context.ts";
import { machineJson, route } from "@/server/http/route.ts";

export const dynamic = "force-dynamic";

/**
 * Long-poll claim. A dispatch hint from the pool's work queue is tried first; the queue is only a
 * hint, so the claim falls back to scanning READY jobs in PostgreSQL, and every hint is
 * acknowledged once the claim transaction has decided (the database owns recovery).
 */
export const POST = route({
  path: AGENT_ENDPOINTS.claim.path,
  summary: "Long-poll claim of one job for the session's pool",
  auth: AGENT_ENDPOINTS.claim.auth,
  responses: {
    200: { description: "a job ticket", schema: AGENT_ENDPOINTS.claim.response },
    204: { description: "nothing to run before wait_ms passed" },
  },
  body: AGENT_ENDPOINTS.claim.request,
  handler: async ({ req, body }) => {
    const { db, cfg, boss, waiter } = services();
    // The claim proves the credential and the session's ownership in its own first statement (one
    // round trip less, ADR 0015), on every pass of the long-poll. Only the FIFO baseline needs the
    // pool up front, for its queue's name.
    const credentialHash = agentCredentialHash(req.headers.get("authorization"));
    const agent =
      cfg.dispatchPolicy === "fifo"
        ? await authenticateAgentToken(db, req.headers.get("authorization"), body.session_id)
        : null;
    const deadline = Date.now() + body.wait_ms;
    const queue = agent ? `dispatch-${agent.pool}` : null;
    for (;;) {
      // An agent that hung up (killed mid-long-poll) must not be handed a job: nobody would run it
      // until its lease expired. The race that remains (a claim committing as it hangs up) is the
      // lease's to settle.
      if (req.signal.aborted) return new Response(null, { status: 204 });
      // Under the fair policy a hint carries no order (the dispatch view decides) and the relay only
      // NOTIFYs: fetching and completing one would cost two queue round trips per claim on the web's
      // small pg-boss pool. Under FIFO (the benchmark baseline) the hinted job is tried first.
      const q = queue ? await boss.catch(() => null) : null;
      const hints = q && queue ? await q.fetch<DispatchPayload>(queue, { batchSize: 1 }).catch(() => []) : [];
      const hint = hints[0];
      const claimStartedAt = Date.now();
      const result = await claimJob(db, cfg, {
        sessionId: body.session_id,
        claimRequestId: body.claim_request_id,
        offer: hint ? { jobId: hint.data.jobId, generation: hint.data.generation } : null,
        credentialHash,
      }).finally(async () => {
        if (hint && q && queue) await q.complete(queue, hint.id).catch(() => undefined);
      });
      observeClaim(result.kind, claimStartedAt);
      if (result.kind === "claimed") return machineJson(200, result.ticket);
      // A hint that was stale tells nothing about other work: look again at once.
      if (hint) continue;
      if (Date.now() >= deadline) return new Response(null, { status: 204 });
      await waiter.wait(Math.min(500, Math.max(0, deadline - Date.now())), req.signal);
    }
  },
});
