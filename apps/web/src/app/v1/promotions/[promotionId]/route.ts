import { authenticateApiToken, getPromotion } from "@kiln/engine";
import { services } from "@/server/context.ts";
import { promotion, promotionWire } from "@/server/http/schemas/environments.ts";
import { json, route } from "@/server/http/route.ts";

export const dynamic = "force-dynamic";

/** GET /v1/promotions/{promotion_id}: the decision, each gate's reason, the approvals and overrides. */
export const GET = route({
  path: "/v1/promotions/{promotion_id}",
  summary: "A promotion: its decision with each gate's reason, its approvals and overrides",
  auth: "api_token",
  responses: { 200: { description: "the promotion", schema: promotion } },
  uuidParams: ["promotionId"],
  handler: async ({ req, params }) => {
    const { db } = services();
    const caller = await authenticateApiToken(db, req.headers.get("authorization"));
    return json(200, promotionWire(await getPromotion(db, caller.orgId, params.promotionId ?? "")));
  },
});
