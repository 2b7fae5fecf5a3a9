import { idTokenJwks } from "@kiln/engine";
import { services } from "@/server/context.ts";
import { route } from "@/server/http/route.ts";

export const dynamic = "force-dynamic";

// The public signing keys of job ID tokens (ADR 0024): the signing key and every retired key whose
// tokens have not all expired. Short cache: a verifier that meets a new kid re-fetches (jose does).
export const GET = route({
  handler: async () => {
    const jwks = await idTokenJwks(services().db);
    return Response.json(jwks, {
      headers: { "cache-control": "public, max-age=60", "content-type": "application/jwk-set+json" },
    });
  },
});
