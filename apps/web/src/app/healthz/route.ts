import { services } from "@/server/context.ts";

export const dynamic = "force-dynamic";

/** 200 once the app can serve and reach PostgreSQL; 503 otherwise. */
export async function GET(): Promise<Response> {
  try {
    await services().db.$queryRaw`SELECT 1`;
    return Response.json({ ok: true }, { headers: { "cache-control": "no-store" } });
  } catch {
    return Response.json(
      { ok: false, error: { code: "SERVICE.UNAVAILABLE", message: "database unreachable" } },
      { status: 503 },
    );
  }
}
