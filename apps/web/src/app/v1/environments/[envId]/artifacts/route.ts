import { authenticateApiToken, listPromotableArtifacts, PROMOTABLE_LIMIT_MAX } from "@kiln/engine";
import { z } from "zod";
import { services } from "@/server/context.ts";
import { promotableArtifactList, promotableArtifactWire } from "@/server/http/schemas/environments.ts";
import { json, route } from "@/server/http/route.ts";

export const dynamic = "force-dynamic";

/** GET /v1/environments/{env_id}/artifacts: what a promotion here may name (issue 29). */
export const GET = route({
  path: "/v1/environments/{env_id}/artifacts",
  summary: "The environment's repo's recent attested artifacts, newest first: the choices for a promotion",
  description:
    "Sealed, attested (logged or verified) and not quarantined artifacts of the environment's repo, with their " +
    "name, job, commit and digest; artifact_id is what POST /v1/environments/{env_id}/promotions takes.",
  auth: "api_token",
  query: z.object({ limit: z.coerce.number().int().min(1).max(PROMOTABLE_LIMIT_MAX).default(20) }),
  responses: { 200: { description: "the promotable artifacts", schema: promotableArtifactList } },
  uuidParams: ["envId"],
  handler: async ({ req, params, query }) => {
    const { db } = services();
    const caller = await authenticateApiToken(db, req.headers.get("authorization"));
    const rows = await listPromotableArtifacts(db, caller.orgId, params.envId ?? "", { limit: query.limit });
    return json(200, { artifacts: rows.map(promotableArtifactWire) });
  },
});
