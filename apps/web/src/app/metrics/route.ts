import { DomainError } from "@kiln/domain";
import { route } from "@/server/http/route.ts";
import { checkMetricsToken, webMetricsRegistry } from "@/server/metrics.ts";

export const dynamic = "force-dynamic";

/** Prometheus text exposition of this web process and of the fleet's PostgreSQL-derived state. */
export const GET = route({
  path: "/metrics",
  summary: "Prometheus metrics (operators' scrape token; 404 when KILN_METRICS_TOKEN is unset)",
  auth: "metrics_token",
  responses: { 200: { description: "Prometheus text format 0.0.4", contentType: "text/plain" } },
  handler: async ({ req }) => {
    const access = checkMetricsToken(req.headers.get("authorization"));
    if (access === "disabled")
      return Response.json(
        { error: { code: "METRICS.DISABLED", message: "metrics are off on this port (KILN_METRICS_TOKEN is unset)" } },
        { status: 404, headers: { "cache-control": "no-store" } },
      );
    if (access === "refused") throw new DomainError("AUTH.UNAUTHENTICATED", "a valid metrics bearer token is required");
    const registry = webMetricsRegistry();
    return new Response(await registry.metrics(), {
      headers: { "content-type": registry.contentType, "cache-control": "no-store" },
    });
  },
});
