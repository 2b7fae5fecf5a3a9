import { z } from "zod";
import { authenticateApiToken, callerOrg, listShredLeaks } from "@kiln/engine";
import { services } from "@/server/context.ts";
import { json, route } from "@/server/http/route.ts";

export const dynamic = "force-dynamic";

const leak = z.object({
  object_key: z.string(),
  kind: z.string(),
  path: z.string(),
  detail: z.string(),
  detected_at: z.string(),
});

/** The deletion sampler's open findings (issue 21, ADR 0037): destroyed data still readable. */
export const GET = route({
  path: "/v1/orgs/{org}/shred-leaks",
  summary: "Deleted objects the deletion sampler could still read, by read path (empty when deletion holds)",
  auth: "api_token",
  responses: { 200: { description: "open leaks", schema: z.object({ leaks: z.array(leak) }) } },
  handler: async ({ req, params }) => {
    const { db } = services();
    const caller = await authenticateApiToken(db, req.headers.get("authorization"));
    const org = await callerOrg(
      db,
      caller,
      params.org ?? "",
      ["member", "admin", "auditor"],
      "reading deletion alerts",
    );
    return json(200, { leaks: await listShredLeaks(db, org.orgId) });
  },
});
