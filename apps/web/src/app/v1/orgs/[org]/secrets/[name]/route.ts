import { adminSecretTarget, authenticateApiToken, deleteSecret, setSecret } from "@kiln/engine";
import { services } from "@/server/context.ts";
import { json, route } from "@/server/http/route.ts";
import { secretValueBody } from "@/server/http/secret-body.ts";

export const dynamic = "force-dynamic";

/** Sets an org secret (a new version each time; write-only: the value is never returned). Admins only. */
export const PUT = route({
  body: secretValueBody,
  maxBytes: 64 * 1024,
  handler: async ({ req, params, body }) => {
    const { db, keks } = services();
    const caller = await authenticateApiToken(db, req.headers.get("authorization"));
    const target = await adminSecretTarget(db, caller, { orgSlug: params.org ?? "" });
    return json(
      200,
      await setSecret(db, keks, { target, name: params.name ?? "", value: body.value, actor: caller.name }),
    );
  },
});

export const DELETE = route({
  handler: async ({ req, params }) => {
    const { db } = services();
    const caller = await authenticateApiToken(db, req.headers.get("authorization"));
    const target = await adminSecretTarget(db, caller, { orgSlug: params.org ?? "" });
    return json(200, await deleteSecret(db, { target, name: params.name ?? "", actor: caller.name }));
  },
});
