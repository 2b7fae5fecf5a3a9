import { releaseDeploymentLock } from "@kiln/engine";
import { z } from "zod";
import { services } from "@/server/context.ts";
import { deployCallerOf } from "@/server/http/deploy-caller.ts";
import { json, route } from "@/server/http/route.ts";

export const dynamic = "force-dynamic";

export const POST = route({
  path: "/v1/environments/{env_id}/deployment-lock/release",
  summary: "Release a deployment lock held by a silent attempt on a host Kiln does not control; admins, audited",
  auth: "api_token",
  body: z.object({ reason: z.string().min(1).max(2000) }).strict(),
  responses: {
    200: { description: "released", schema: z.object({ released: z.literal(true), lock_id: z.string() }) },
  },
  uuidParams: ["envId"],
  handler: async ({ req, params, body }) => {
    const { db, cfg } = services();
    return json(
      200,
      await releaseDeploymentLock(db, cfg, await deployCallerOf(db, req), params.envId ?? "", body.reason),
    );
  },
});
