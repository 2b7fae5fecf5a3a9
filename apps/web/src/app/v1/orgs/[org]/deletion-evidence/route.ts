import { z } from "zod";
import { authenticateApiToken, callerOrg, listDestructionEvidence } from "@kiln/engine";
import { services } from "@/server/context.ts";
import { json, route } from "@/server/http/route.ts";

export const dynamic = "force-dynamic";

const evidence = z.object({
  key_id: z.string(),
  day: z.string(),
  kind: z.string(),
  class: z.string(),
  due_at: z.string(),
  destroyed_at: z.string(),
  platform_key_destroyed_at: z.string().nullable(),
  objects: z.number().int(),
});

/** Crypto-shredding's deletion evidence (issue 21, ADR 0037): the org's destroyed data keys. */
export const GET = route({
  path: "/v1/orgs/{org}/deletion-evidence",
  summary:
    "The org's destroyed data keys, newest first: key id, day, kind, class, due, destroyed at (admins and auditors)",
  auth: "api_token",
  responses: { 200: { description: "deletion evidence", schema: z.object({ evidence: z.array(evidence) }) } },
  handler: async ({ req, params }) => {
    const { db } = services();
    const caller = await authenticateApiToken(db, req.headers.get("authorization"));
    const org = await callerOrg(db, caller, params.org ?? "", ["admin", "auditor"], "reading deletion evidence");
    return json(200, { evidence: await listDestructionEvidence(db, org.orgId, 200) });
  },
});
