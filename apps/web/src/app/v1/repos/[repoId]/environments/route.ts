import { authenticateApiToken, createEnvironment, listEnvironments } from "@kiln/engine";
import { z } from "zod";
import { services } from "@/server/context.ts";
import { tokenActor } from "@/server/environments.ts";
import { environment, environmentList, environmentWire } from "@/server/http/schemas/environments.ts";
import { json, route } from "@/server/http/route.ts";

export const dynamic = "force-dynamic";

/** GET /v1/repos/{repo_id}/environments: the repo's environments in promotion order (issue 18). */
export const GET = route({
  path: "/v1/repos/{repo_id}/environments",
  summary: "The repo's environments in promotion order, each with its pointer (digest, artifact, attestation)",
  auth: "api_token",
  responses: { 200: { description: "the environments", schema: environmentList } },
  uuidParams: ["repoId"],
  handler: async ({ req, params }) => {
    const { db } = services();
    const caller = await authenticateApiToken(db, req.headers.get("authorization"));
    const envs = await listEnvironments(db, caller.orgId, params.repoId ?? "");
    return json(200, { environments: envs.map(environmentWire) });
  },
});

const createBody = z
  .object({
    name: z.string().min(1).max(63),
    after: z.string().min(1).max(63).nullable().optional(),
    production: z.boolean().optional(),
  })
  .strict();

/** POST /v1/repos/{repo_id}/environments {name, after?, production?}: org admins; default policy v1. */
export const POST = route({
  path: "/v1/repos/{repo_id}/environments",
  summary: "Create an environment ({name, after?, production?}); admins only; it starts with the default gate policy",
  auth: "api_token",
  body: createBody,
  responses: { 201: { description: "the environment", schema: environment } },
  uuidParams: ["repoId"],
  handler: async ({ req, params, body }) => {
    const { db } = services();
    const caller = await authenticateApiToken(db, req.headers.get("authorization"));
    const e = await createEnvironment(db, tokenActor(caller), {
      repoId: params.repoId ?? "",
      name: body.name,
      after: body.after ?? null,
      ...(body.production !== undefined ? { production: body.production } : {}),
    });
    return json(201, environmentWire(e));
  },
});
