import { authenticateApiToken, requestRollback } from "@kiln/engine";
import { z } from "zod";
import { services } from "@/server/context.ts";
import { envDeps, tokenActor } from "@/server/environments.ts";
import { promotion, promotionWire } from "@/server/http/schemas/environments.ts";
import { json, route } from "@/server/http/route.ts";

export const dynamic = "force-dynamic";

/** POST /v1/environments/{env_id}/rollbacks {to_artifact_id, reason}: back to a digest it had. */
export const POST = route({
  path: "/v1/environments/{env_id}/rollbacks",
  summary:
    "Roll back to an artifact the environment ran before ({to_artifact_id, reason}); decided by the gates as a rollback",
  auth: "api_token",
  body: z.object({ to_artifact_id: z.uuid(), reason: z.string().min(1).max(2000) }).strict(),
  responses: {
    201: { description: "the rollback (a promotion of kind rollback) and its decision", schema: promotion },
  },
  uuidParams: ["envId"],
  handler: async ({ req, params, body }) => {
    const { db } = services();
    const caller = await authenticateApiToken(db, req.headers.get("authorization"));
    const p = await requestRollback(db, envDeps(), tokenActor(caller), {
      environmentId: params.envId ?? "",
      toArtifactId: body.to_artifact_id,
      reason: body.reason,
    });
    return json(201, promotionWire(p));
  },
});
