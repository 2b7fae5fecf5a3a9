import { authenticateApiToken, requestPromotion } from "@kiln/engine";
import { z } from "zod";
import { services } from "@/server/context.ts";
import { envDeps, tokenActor } from "@/server/environments.ts";
import { promotion, promotionWire } from "@/server/http/schemas/environments.ts";
import { json, route } from "@/server/http/route.ts";

export const dynamic = "force-dynamic";

const body = z.union([
  z.object({ artifact_id: z.uuid(), reason: z.string().min(1).max(2000) }).strict(),
  z
    .object({
      run_id: z.uuid(),
      job: z.string().min(1).max(200),
      artifact: z.string().min(1).max(200),
      reason: z.string().min(1).max(2000),
    })
    .strict(),
]);

/** POST /v1/environments/{env_id}/promotions: the gates decide at once; on allow the pointer moves. */
export const POST = route({
  path: "/v1/environments/{env_id}/promotions",
  summary:
    "Request a promotion ({artifact_id, reason} or {run_id, job, artifact, reason}); answers the decision and state",
  description:
    "201 with the promotion: decision {verdict allow|deny|override_required, reasons[{gate, status, code, message}]}. " +
    "allow moved the pointer in the same transaction; override_required waits for approvals or an override; deny is final.",
  auth: "api_token",
  body,
  responses: { 201: { description: "the promotion and its decision", schema: promotion } },
  uuidParams: ["envId"],
  handler: async ({ req, params, body: b }) => {
    const { db } = services();
    const caller = await authenticateApiToken(db, req.headers.get("authorization"));
    const artifact =
      "artifact_id" in b ? { artifactId: b.artifact_id } : { runId: b.run_id, job: b.job, artifact: b.artifact };
    const p = await requestPromotion(db, envDeps(), tokenActor(caller), {
      environmentId: params.envId ?? "",
      artifact,
      reason: b.reason,
    });
    return json(201, promotionWire(p));
  },
});
