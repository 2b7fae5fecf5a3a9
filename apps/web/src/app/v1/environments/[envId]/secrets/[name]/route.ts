import { deleteEnvironmentSecret, setEnvironmentSecret } from "@kiln/engine";
import { z } from "zod";
import { services } from "@/server/context.ts";
import { deployCallerOf } from "@/server/http/deploy-caller.ts";
import { json, route } from "@/server/http/route.ts";
import { secretValueBody } from "@/server/http/secret-body.ts";

export const dynamic = "force-dynamic";

export const PUT = route({
  path: "/v1/environments/{env_id}/secrets/{name}",
  summary: "Set an environment secret (overrides repo and org secrets of the name in its deploy runs); admins",
  auth: "api_token",
  body: secretValueBody,
  responses: { 200: { description: "the secret's name and version", schema: z.record(z.string(), z.unknown()) } },
  uuidParams: ["envId"],
  maxBytes: 64 * 1024,
  handler: async ({ req, params, body }) => {
    const { db, keks } = services();
    const caller = await deployCallerOf(db, req);
    return json(
      200,
      await setEnvironmentSecret(db, keks, caller, params.envId ?? "", { name: params.name ?? "", value: body.value }),
    );
  },
});

export const DELETE = route({
  path: "/v1/environments/{env_id}/secrets/{name}",
  summary: "Delete an environment secret; admins, audited",
  auth: "api_token",
  responses: { 200: { description: "deleted", schema: z.record(z.string(), z.unknown()) } },
  uuidParams: ["envId"],
  handler: async ({ req, params }) => {
    const { db } = services();
    return json(
      200,
      await deleteEnvironmentSecret(db, await deployCallerOf(db, req), params.envId ?? "", params.name ?? ""),
    );
  },
});
