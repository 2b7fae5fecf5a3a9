import { openIdConfiguration } from "@kiln/domain";
import { services } from "@/server/context.ts";
import { route } from "@/server/http/route.ts";

export const dynamic = "force-dynamic";

// OpenID Connect Discovery for job ID tokens (issue 16, ADR 0024): public, no authentication.
// Cacheable for a few minutes: it changes only when KILN_PUBLIC_URL does.
export const GET = route({
  handler: async () => {
    const { issuer } = services().identity();
    return Response.json(openIdConfiguration(issuer, `${issuer}/.well-known/jwks.json`), {
      headers: { "cache-control": "public, max-age=300" },
    });
  },
});
