import { z } from "zod";
import { authenticateApiToken, removeSchedule } from "@kiln/engine";
import { services } from "@/server/context.ts";
import { route } from "@/server/http/route.ts";

export const dynamic = "force-dynamic";

/** DELETE /v1/schedules/{schedule_id}: removes a schedule added through the API (audited). */
export const DELETE = route({
  path: "/v1/schedules/{schedule_id}",
  summary: "Remove a schedule added through the API or CLI (a workflow file's schedules change with the file)",
  auth: "api_token",
  responses: { 200: { description: "removed", schema: z.record(z.string(), z.unknown()) } },
  uuidParams: ["scheduleId"],
  handler: async ({ req, params }) => {
    const { db } = services();
    const caller = await authenticateApiToken(db, req.headers.get("authorization"));
    await removeSchedule(db, {
      caller: { orgId: caller.orgId, role: caller.role, actor: `token:${caller.tokenId}` },
      scheduleId: params.scheduleId ?? "",
    });
    return new Response(null, { status: 204 });
  },
});
