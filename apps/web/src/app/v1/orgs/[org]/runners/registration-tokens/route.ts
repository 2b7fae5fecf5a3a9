import { authenticateApiToken, callerOrg, createRegistrationToken } from "@kiln/engine";
import { REGISTRATION_TOKEN_TTL } from "@kiln/domain";
import { z } from "zod";
import { services } from "@/server/context.ts";
import { json, route } from "@/server/http/route.ts";
import { registrationToken } from "@/server/http/schemas/runners.ts";

export const dynamic = "force-dynamic";

const body = z
  .object({
    pool: z.string().min(1).max(102),
    /** Single use unless asked otherwise. */
    single_use: z.boolean().default(true),
    expires_in_minutes: z.number().int().min(1).max(REGISTRATION_TOKEN_TTL.maxMinutes).optional(),
  })
  .strict();

/** A short-lived registration token for one of the org's own pools (admins; audited; shown once). */
export const POST = route({
  path: "/v1/orgs/{org}/runners/registration-tokens",
  summary: "A short-lived token a host exchanges once for its credential in one of the org's pools; admins",
  auth: "api_token",
  body,
  responses: { 201: { description: "the token, shown once", schema: registrationToken } },
  handler: async ({ req, params, body: b }) => {
    const { db } = services();
    const caller = await authenticateApiToken(db, req.headers.get("authorization"));
    const org = await callerOrg(db, caller, params.org ?? "", ["admin"], "registering runners");
    const t = await createRegistrationToken(db, {
      orgId: org.orgId,
      pool: b.pool,
      singleUse: b.single_use,
      ...(b.expires_in_minutes !== undefined ? { expiresInMinutes: b.expires_in_minutes } : {}),
      actor: `token:${caller.tokenId}`,
    });
    return json(201, {
      id: t.id,
      token: t.token,
      org: t.org,
      pool: t.pool,
      single_use: t.singleUse,
      expires_at: t.expiresAt,
    });
  },
});
