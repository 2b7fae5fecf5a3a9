import { authenticateApiToken, overridePromotion } from "@kiln/engine";
import { z } from "zod";
import { services } from "@/server/context.ts";
import { envDeps, tokenActor } from "@/server/environments.ts";
import { promotion, promotionWire } from "@/server/http/schemas/environments.ts";
import { json, route } from "@/server/http/route.ts";

export const dynamic = "force-dynamic";

/** POST /v1/promotions/{promotion_id}/overrides {reason, expires_at}: break glass, admins only. */
export const POST = route({
  path: "/v1/promotions/{promotion_id}/overrides",
  summary: "Override the failing overridable gates of a pending promotion ({reason, expires_at}); admins only, audited",
  description:
    "When the policy requires a second approver, a second admin's call on the same endpoint applies the override; it must " +
    "come before expires_at (a call after it records a new override). Provenance, a rejection and an unavailable gate are " +
    "never overridable.",
  auth: "api_token",
  body: z.object({ reason: z.string().min(1).max(2000), expires_at: z.iso.datetime({ offset: true }) }).strict(),
  responses: { 201: { description: "the promotion with its overrides", schema: promotion } },
  uuidParams: ["promotionId"],
  handler: async ({ req, params, body }) => {
    const { db } = services();
    const caller = await authenticateApiToken(db, req.headers.get("authorization"));
    const p = await overridePromotion(db, envDeps(), tokenActor(caller), {
      promotionId: params.promotionId ?? "",
      reason: body.reason,
      expiresAt: new Date(body.expires_at),
    });
    return json(201, promotionWire(p));
  },
});
