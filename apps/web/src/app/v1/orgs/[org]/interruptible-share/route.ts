import { z } from "zod";
import { authenticateApiToken, callerOrg, interruptibleShares } from "@kiln/engine";
import { services } from "@/server/context.ts";
import { json, route } from "@/server/http/route.ts";
import { poolShareWire, shares } from "@/server/http/schemas/fleet.ts";

export const dynamic = "force-dynamic";

/** Seed 002's figure per pool, over the org's own background attempts (issue 22, ADR 0035); admins. */
export const GET = route({
  path: "/v1/orgs/{org}/interruptible-share",
  summary:
    "Per pool: the share of the org's background job-minutes that ran on interruptible capacity (target 55%), reclaims",
  auth: "api_token",
  query: z.object({
    window_hours: z.coerce.number().int().min(1).max(2160).default(24),
    pool: z.string().min(1).max(110).optional(),
  }),
  responses: { 200: { description: "the shares", schema: shares } },
  handler: async ({ req, params, query }) => {
    const { db } = services();
    const caller = await authenticateApiToken(db, req.headers.get("authorization"));
    const org = await callerOrg(db, caller, params.org ?? "", ["admin"], "reading capacity shares");
    const rows = await interruptibleShares(db, {
      orgId: org.orgId,
      windowHours: query.window_hours,
      pool: query.pool ?? null,
    });
    return json(200, { window_hours: query.window_hours, pools: rows.map(poolShareWire) });
  },
});
