import { listEnvironmentSecrets } from "@kiln/engine";
import { z } from "zod";
import { services } from "@/server/context.ts";
import { deployCallerOf } from "@/server/http/deploy-caller.ts";
import { json, route } from "@/server/http/route.ts";

export const dynamic = "force-dynamic";

export const GET = route({
  path: "/v1/environments/{env_id}/secrets",
  summary: "The environment's secrets (delivered only to its deploy runs): names, versions, never values",
  auth: "api_token",
  responses: { 200: { description: "the secrets", schema: z.record(z.string(), z.unknown()) } },
  uuidParams: ["envId"],
  handler: async ({ req, params }) => {
    const { db } = services();
    return json(200, { secrets: await listEnvironmentSecrets(db, await deployCallerOf(db, req), params.envId ?? "") });
  },
});
