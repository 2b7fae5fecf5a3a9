import { addSchedule, authenticateApiToken, listSchedules } from "@kiln/engine";
import { z } from "zod";
import { services } from "@/server/context.ts";
import { json, route } from "@/server/http/route.ts";

export const dynamic = "force-dynamic";

/** GET /v1/repos/{repo_id}/schedules: the repo's schedules with their next runs (issue 20). */
export const GET = route({
  path: "/v1/repos/{repo_id}/schedules",
  summary: "The repo's schedules (from its workflow file or added here), each with its next runs",
  auth: "api_token",
  responses: { 200: { description: "the schedules", schema: z.record(z.string(), z.unknown()) } },
  uuidParams: ["repoId"],
  handler: async ({ req, params }) => {
    const { db } = services();
    const caller = await authenticateApiToken(db, req.headers.get("authorization"));
    return json(200, { schedules: await listSchedules(db, { orgId: caller.orgId, repoId: params.repoId ?? "" }) });
  },
});

const addBody = z
  .object({ cron: z.string().min(1).max(100), timezone: z.string().min(1).max(64).default("UTC") })
  .strict();

/** POST /v1/repos/{repo_id}/schedules {cron, timezone}: a member's schedule (audited). */
export const POST = route({
  path: "/v1/repos/{repo_id}/schedules",
  summary: "Add a schedule ({cron, timezone}); each slot admits one run at the default branch's head",
  auth: "api_token",
  responses: { 201: { description: "the schedule", schema: z.record(z.string(), z.unknown()) } },
  body: addBody,
  uuidParams: ["repoId"],
  handler: async ({ req, params, body }) => {
    const { db } = services();
    const caller = await authenticateApiToken(db, req.headers.get("authorization"));
    const s = await addSchedule(db, {
      caller: { orgId: caller.orgId, role: caller.role, actor: `token:${caller.tokenId}` },
      repoId: params.repoId ?? "",
      cron: body.cron,
      timezone: body.timezone,
    });
    return json(201, s);
  },
});
