import { authenticateApiToken, reviewPromotion } from "@kiln/engine";
import { APPROVAL_DECISIONS } from "@kiln/domain";
import { z } from "zod";
import { services } from "@/server/context.ts";
import { envDeps, tokenActor } from "@/server/environments.ts";
import { promotion, promotionWire } from "@/server/http/schemas/environments.ts";
import { json, route } from "@/server/http/route.ts";

export const dynamic = "force-dynamic";

/** POST /v1/promotions/{promotion_id}/approvals {decision, comment}: a member's (personal token). */
export const POST = route({
  path: "/v1/promotions/{promotion_id}/approvals",
  summary:
    "Approve or reject a pending promotion ({decision: approve|reject, comment}); needs a member's personal token",
  description:
    "Separation of duties: the requester and the change's author are refused (403 APPROVAL.SEPARATION_OF_DUTIES); " +
    "an org token is nobody (403 APPROVAL.MEMBER_REQUIRED). The promotion is decided again at once.",
  auth: "api_token",
  body: z.object({ decision: z.enum(APPROVAL_DECISIONS), comment: z.string().max(2000).optional() }).strict(),
  responses: { 201: { description: "the promotion after the approval", schema: promotion } },
  uuidParams: ["promotionId"],
  handler: async ({ req, params, body }) => {
    const { db } = services();
    const caller = await authenticateApiToken(db, req.headers.get("authorization"));
    const p = await reviewPromotion(db, envDeps(), tokenActor(caller), {
      promotionId: params.promotionId ?? "",
      decision: body.decision,
      comment: body.comment ?? null,
    });
    return json(201, promotionWire(p));
  },
});
