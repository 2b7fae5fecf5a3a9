import { adminSecretTarget, authenticateApiToken, listSecrets } from "@kiln/engine";
import { services } from "@/server/context.ts";
import { json, route } from "@/server/http/route.ts";

export const dynamic = "force-dynamic";

/** The org's own secrets: names, versions, who changed them and when; never values (admins). */
export const GET = route({
  handler: async ({ req, params }) => {
    const { db } = services();
    const caller = await authenticateApiToken(db, req.headers.get("authorization"));
    const target = await adminSecretTarget(db, caller, { orgSlug: params.org ?? "" });
    return json(200, { secrets: await listSecrets(db, { orgId: target.orgId, scope: target.scope }) });
  },
});
