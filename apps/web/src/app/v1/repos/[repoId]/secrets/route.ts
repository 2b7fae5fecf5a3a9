import { adminSecretTarget, authenticateApiToken, listSecrets } from "@kiln/engine";
import { services } from "@/server/context.ts";
import { json, route } from "@/server/http/route.ts";

export const dynamic = "force-dynamic";

/** One repository's secrets (its org's admins): names, versions, who and when; never values. */
export const GET = route({
  uuidParams: ["repoId"],
  handler: async ({ req, params }) => {
    const { db } = services();
    const caller = await authenticateApiToken(db, req.headers.get("authorization"));
    const target = await adminSecretTarget(db, caller, { repoId: params.repoId ?? "" });
    return json(200, { secrets: await listSecrets(db, { orgId: target.orgId, scope: target.scope }) });
  },
});
