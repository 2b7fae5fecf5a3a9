import { z } from "zod";
import { adminSecretTarget, authenticateApiToken, listSecrets } from "@kiln/engine";
import { services } from "@/server/context.ts";
import { json, route } from "@/server/http/route.ts";

export const dynamic = "force-dynamic";

/** The org's own secrets: names, versions, who changed them and when; never values (admins). */
export const GET = route({
  path: "/v1/orgs/{org}/secrets",
  summary: "The org's secrets: names, versions, who changed them and when, never values; admins",
  auth: "api_token",
  responses: { 200: { description: "the secrets", schema: z.record(z.string(), z.unknown()) } },
  handler: async ({ req, params }) => {
    const { db } = services();
    const caller = await authenticateApiToken(db, req.headers.get("authorization"));
    const target = await adminSecretTarget(db, caller, { orgSlug: params.org ?? "" });
    return json(200, { secrets: await listSecrets(db, { orgId: target.orgId, scope: target.scope }) });
  },
});
