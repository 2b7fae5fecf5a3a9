import { DomainError } from "@kiln/domain";
import { authenticateApiToken, introspectIdToken } from "@kiln/engine";
import { z } from "zod";
import { services } from "@/server/context.ts";
import { route } from "@/server/http/route.ts";

export const dynamic = "force-dynamic";

const form = z.object({ token: z.string().min(1).max(8192), token_type_hint: z.string().max(50).optional() });

/**
 * OAuth 2.0 Token Introspection (RFC 7662) for job ID tokens (ADR 0024). The caller authenticates
 * with an org API token (Bearer, any role): a relying party is registered by holding one. The
 * answer is `{active: true, ...claims}` only for a token of the caller's own org whose attempt is
 * current; anything else (another org's token, expired, unknown, tampered, attempt over) is
 * `{active: false}`, and nothing more (RFC 7662 2.2).
 */
export const POST = route({
  maxBytes: 16 * 1024,
  handler: async ({ req, rawBody }) => {
    const { db, identity } = services();
    const caller = await authenticateApiToken(db, req.headers.get("authorization"));
    const type = req.headers.get("content-type") ?? "";
    if (!/^application\/x-www-form-urlencoded\b/i.test(type))
      throw new DomainError("REQUEST.INVALID", "send the token form-encoded (application/x-www-form-urlencoded)");
    const parsed = form.safeParse(Object.fromEntries(new URLSearchParams(Buffer.from(rawBody).toString("utf8"))));
    if (!parsed.success) throw new DomainError("REQUEST.INVALID", "token: a token is required");
    const answer = await introspectIdToken(db, parsed.data.token, {
      issuer: identity().issuer,
      callerOrgId: caller.orgId,
    });
    return Response.json(answer, { headers: { "cache-control": "no-store" } });
  },
});
