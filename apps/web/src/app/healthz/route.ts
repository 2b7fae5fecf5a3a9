import { services } from "@/server/context.ts";
import { route } from "@/server/http/route.ts";
import { health } from "@/server/http/schemas/resources.ts";

export const dynamic = "force-dynamic";

/** 200 once the app can serve and reach PostgreSQL; 503 otherwise. */
export const GET = route({
  path: "/healthz",
  summary: "200 when the app can serve and reach PostgreSQL",
  auth: "none",
  responses: { 200: { description: "healthy", schema: health }, 503: { description: "the database is unreachable" } },
  handler: async () => {
    try {
      await services().db.$queryRaw`SELECT 1`;
      return Response.json({ ok: true }, { headers: { "cache-control": "no-store" } });
    } catch {
      return Response.json(
        { ok: false, error: { code: "SERVICE.UNAVAILABLE", message: "database unreachable" } },
        { status: 503 },
      );
    }
  },
});
