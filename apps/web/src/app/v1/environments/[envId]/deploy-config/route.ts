import { clearDeployConfig, deployConfigBody, getDeployConfig, setDeployConfig } from "@kiln/engine";
import { z } from "zod";
import { services } from "@/server/context.ts";
import { deployCallerOf } from "@/server/http/deploy-caller.ts";
import { json, route } from "@/server/http/route.ts";

export const dynamic = "force-dynamic";

const variable = z.object({ name: z.string(), value: z.string(), updated_by: z.string(), updated_at: z.string() });
const view = z.object({
  environment_id: z.string(),
  workflow_path: z.string().nullable(),
  artifact_path: z.string().nullable(),
  updated_by: z.string().nullable(),
  updated_at: z.string().nullable(),
  variables: z.array(variable),
});

export const GET = route({
  path: "/v1/environments/{env_id}/deploy-config",
  summary: "The environment's deploy workflow path, artifact path and variables (docs/adr/0033)",
  auth: "api_token",
  responses: { 200: { description: "the deploy configuration", schema: view } },
  uuidParams: ["envId"],
  handler: async ({ req, params }) => {
    const { db } = services();
    return json(200, await getDeployConfig(db, await deployCallerOf(db, req), params.envId ?? ""));
  },
});

export const PUT = route({
  path: "/v1/environments/{env_id}/deploy-config",
  summary: "Set the deploy workflow (read at the promoted artifact's commit) and artifact path; admins, audited",
  auth: "api_token",
  body: deployConfigBody,
  responses: { 200: { description: "the deploy configuration", schema: view } },
  uuidParams: ["envId"],
  handler: async ({ req, params, body }) => {
    const { db } = services();
    return json(200, await setDeployConfig(db, await deployCallerOf(db, req), params.envId ?? "", body));
  },
});

export const DELETE = route({
  path: "/v1/environments/{env_id}/deploy-config",
  summary: "Remove the deploy workflow: pointer moves no longer start deploy runs; admins, audited",
  auth: "api_token",
  responses: { 200: { description: "removed", schema: z.object({ cleared: z.literal(true) }) } },
  uuidParams: ["envId"],
  handler: async ({ req, params }) => {
    const { db } = services();
    await clearDeployConfig(db, await deployCallerOf(db, req), params.envId ?? "");
    return json(200, { cleared: true as const });
  },
});
