import { authenticateApiToken, getPolicyVersion, setEnvironmentPolicy } from "@kiln/engine";
import { z } from "zod";
import { services } from "@/server/context.ts";
import { tokenActor } from "@/server/environments.ts";
import { policyVersion, policyWire } from "@/server/http/schemas/environments.ts";
import { json, route } from "@/server/http/route.ts";

export const dynamic = "force-dynamic";

/** GET /v1/environments/{env_id}/policy: the gate policy version in force. */
export const GET = route({
  path: "/v1/environments/{env_id}/policy",
  summary: "The environment's gate policy in force and its version",
  auth: "api_token",
  responses: { 200: { description: "the policy version", schema: policyVersion } },
  uuidParams: ["envId"],
  handler: async ({ req, params }) => {
    const { db } = services();
    const caller = await authenticateApiToken(db, req.headers.get("authorization"));
    return json(200, policyWire(await getPolicyVersion(db, caller.orgId, params.envId ?? "")));
  },
});

/** PUT /v1/environments/{env_id}/policy {policy, comment?}: org admins; a new immutable version. */
export const PUT = route({
  path: "/v1/environments/{env_id}/policy",
  summary: "Set the gate policy ({policy, comment?}); admins only; each change is a new audited version",
  auth: "api_token",
  body: z.object({ policy: z.record(z.string(), z.unknown()), comment: z.string().max(500).optional() }).strict(),
  responses: { 200: { description: "the new policy version", schema: policyVersion } },
  uuidParams: ["envId"],
  handler: async ({ req, params, body }) => {
    const { db } = services();
    const caller = await authenticateApiToken(db, req.headers.get("authorization"));
    const v = await setEnvironmentPolicy(db, tokenActor(caller), {
      environmentId: params.envId ?? "",
      policy: body.policy,
      comment: body.comment ?? null,
    });
    return json(200, policyWire(v));
  },
});
