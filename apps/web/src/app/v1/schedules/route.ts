import { z } from "zod";
import { authenticateApiToken, listSchedules } from "@kiln/engine";
import { services } from "@/server/context.ts";
import { json, route } from "@/server/http/route.ts";

export const dynamic = "force-dynamic";

/** GET /v1/schedules: every schedule of the caller's org, with next runs (issue 20). */
export const GET = route({
  path: "/v1/schedules",
  summary: "The org's schedules across its repos, with their next runs",
  auth: "api_token",
  responses: { 200: { description: "the schedules", schema: z.record(z.string(), z.unknown()) } },
  handler: async ({ req }) => {
    const { db } = services();
    const caller = await authenticateApiToken(db, req.headers.get("authorization"));
    return json(200, { schedules: await listSchedules(db, { orgId: caller.orgId }) });
  },
});
