import { deleteEnvironmentVariable, setEnvironmentVariable } from "@kiln/engine";
import { MAX_ENV_VARIABLE_BYTES } from "@kiln/domain";
import { z } from "zod";
import { services } from "@/server/context.ts";
import { deployCallerOf } from "@/server/http/deploy-caller.ts";
import { json, route } from "@/server/http/route.ts";

export const dynamic = "force-dynamic";

export const PUT = route({
  path: "/v1/environments/{env_id}/variables/{name}",
  summary: "Set a deploy variable, given to every job of the environment's deploy runs; admins, audited",
  auth: "api_token",
  body: z.object({ value: z.string().max(MAX_ENV_VARIABLE_BYTES) }).strict(),
  responses: { 200: { description: "the variable", schema: z.object({ name: z.string(), value: z.string() }) } },
  uuidParams: ["envId"],
  handler: async ({ req, params, body }) => {
    const { db } = services();
    const caller = await deployCallerOf(db, req);
    return json(
      200,
      await setEnvironmentVariable(db, caller, params.envId ?? "", { name: params.name ?? "", value: body.value }),
    );
  },
});

export const DELETE = route({
  path: "/v1/environments/{env_id}/variables/{name}",
  summary: "Delete a deploy variable; admins, audited",
  auth: "api_token",
  responses: { 200: { description: "deleted", schema: z.object({ deleted: z.string() }) } },
  uuidParams: ["envId"],
  handler: async ({ req, params }) => {
    const { db } = services();
    await deleteEnvironmentVariable(db, await deployCallerOf(db, req), params.envId ?? "", params.name ?? "");
    return json(200, { deleted: params.name ?? "" });
  },
});
