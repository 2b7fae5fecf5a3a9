import { authenticateApiToken, downloadArtifact, type ArtifactReader } from "@kiln/engine";
import { DomainError } from "@kiln/domain";
import { currentUser } from "@/server/auth/index.ts";
import { services } from "@/server/context.ts";
import { route } from "@/server/http/route.ts";
import { redirect } from "@/server/http/schemas/resources.ts";

export const dynamic = "force-dynamic";

/**
 * The artifact download of the API and of the dashboard's run page (issue 19, 20): authorised on
 * every request (a token's org, or the session's membership, in the query), then a 302 to a
 * presigned URL that expires within minutes. GET only and no CORS headers, so another site cannot
 * use a member's cookie to read the redirect.
 */
export const GET = route({
  path: "/v1/artifacts/{artifact_id}/download",
  summary: "Download an artifact: a redirect to a short-lived presigned URL",
  description:
    "410 ARTIFACT.EXPIRED when retention deleted its bytes; another org's artifact is 404 ARTIFACT.NOT_FOUND.",
  auth: "api_token_or_session",
  uuidParams: ["artifactId"],
  responses: { 302: redirect },
  handler: async ({ req, params }) => {
    const { db, artifacts } = services();
    let reader: ArtifactReader;
    if (req.headers.get("authorization") !== null) {
      reader = { orgId: (await authenticateApiToken(db, req.headers.get("authorization"))).orgId };
    } else {
      const user = req.headers.get("cookie") !== null ? await currentUser() : null;
      if (!user) throw new DomainError("AUTH.UNAUTHENTICATED", "send an API token (Authorization: Bearer) or sign in");
      reader = { userId: user.id };
    }
    const d = await downloadArtifact(db, artifacts(), { artifactId: params.artifactId ?? "", reader });
    return new Response(null, { status: 302, headers: { location: d.url, "cache-control": "no-store" } });
  },
});
