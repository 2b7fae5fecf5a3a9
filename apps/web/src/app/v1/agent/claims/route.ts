import { agentProtocol, DomainError } from "@kiln/domain";
import { authenticateAgentToken, claimJob, type DispatchPayload } from "@kiln/engine";
import { services } from "@/server/context.ts";
import { json, route } from "@/server/http/route.ts";

export const dynamic = "force-dynamic";

/**
 * Long-poll claim. A dispatch hint from the pool's work queue is tried first; the queue is only a
 * hint, so the claim falls back to scanning READY jobs in PostgreSQL, and every hint is
 * acknowledged once the claim transaction has decided (the database owns recovery).
 */
export const POST = route({
  body: agentProtocol.claimRequest,
  handler: async ({ req, body }) => {
    const { db, cfg, boss, waiter } = services();
    const agent = await authenticateAgentToken(db, req.headers.get("authorization"));
    const owns = await db.$queryRaw<{ n: bigint }[]>`
      SELECT count(*) AS n FROM agent_session WHERE id = ${body.session_id}::uuid AND agent_token_id = ${agent.id}::uuid`;
    if ((owns[0]?.n ?? 0n) === 0n) throw new DomainError("SESSION.NOT_FOUND", "unknown agent session; register again");
    const deadline = Date.now() + body.wait_ms;
    const queue = `dispatch-${agent.pool}`;
    for (;;) {
      const q = await boss.catch(() => null);
      const hints = q ? await q.fetch<DispatchPayload>(queue, { batchSize: 1 }).catch(() => []) : [];
      const hint = hints[0];
      // The address agents claim through is a platform service for mediated egress (issue 3).
      const egressPlatformHosts = [...cfg.egressPlatformHosts, new URL(req.url).host];
      const result = await claimJob(db, { ...cfg, egressPlatformHosts }, {
        sessionId: body.session_id,
        claimRequestId: body.claim_request_id,
        offer: hint ? { jobId: hint.data.jobId, generation: hint.data.generation } : null,
      }).finally(async () => {
        if (hint && q) await q.complete(queue, hint.id).catch(() => undefined);
      });
      if (result.kind === "claimed") return json(200, result.ticket);
      // A hint that was stale tells nothing about other work: look again at once.
      if (hint) continue;
      if (Date.now() >= deadline) return new Response(null, { status: 204 });
      await waiter.wait(Math.min(500, Math.max(0, deadline - Date.now())));
    }
  },
});
