import { DomainError } from "@kiln/domain";
import { authenticateApiToken, requestReclaim } from "@kiln/engine";
import { services } from "@/server/context.ts";
import { json, route } from "@/server/http/route.ts";
import { reclaimAnswer } from "@/server/http/schemas/fleet.ts";

export const dynamic = "force-dynamic";

/**
 * A reclaim notice to an interruptible host the caller's org owns (issue 22, ADR 0035): its agent
 * stops as on SIGUSR2, its jobs report host.reclaimed and go to on-demand capacity. Platform
 * operators reclaim any host from the CLI (`kiln fleet reclaim`) or the dashboard.
 */
export const POST = route({
  path: "/v1/pools/{pool}/hosts/{host}/reclaim",
  summary:
    "Send a reclaim notice to an interruptible host (runner id or name): its jobs re-dispatch to on-demand capacity; admins, audited",
  auth: "api_token",
  responses: { 202: { description: "the notice is left for the host's agent", schema: reclaimAnswer } },
  handler: async ({ req, params }) => {
    const { db } = services();
    const caller = await authenticateApiToken(db, req.headers.get("authorization"));
    if (caller.role !== "admin") throw new DomainError("AUTH.FORBIDDEN", "reclaiming a host needs the admin role");
    const r = await requestReclaim(db, {
      pool: params.pool ?? "",
      host: params.host ?? "",
      orgId: caller.orgId,
      actor: caller.name,
    });
    return json(202, { runner_id: r.runnerId, name: r.name, pool: r.pool, sessions: r.sessions });
  },
});
