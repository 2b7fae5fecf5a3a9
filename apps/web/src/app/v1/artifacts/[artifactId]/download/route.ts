import { authenticateApiToken, downloadArtifact, type ArtifactReader } from "@kiln/engine";
import { DomainError } from "@kiln/domain";
import { currentUser } from "@/server/auth/index.ts";
import { services } from "@/server/context.ts";
import { artifactDownloadResponse, sealedArtifactBody } from "@/server/http/artifact-download.ts";
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
  summary: "Download an artifact: a redirect to a short-lived presigned URL, or the bytes of a sealed one",
  description:
    "A plaintext artifact answers 302 to a presigned URL. An artifact sealed under a crypto-shredding data key (ADR 0037) answers 200 with its opened bytes and an x-kiln-sha256 header. 410 ARTIFACT.EXPIRED when retention deleted its bytes, 410 SHRED.KEY_DESTROYED when its key was destroyed; another org's artifact is 404 ARTIFACT.NOT_FOUND.",
  auth: "api_token_or_session",
  uuidParams: ["artifactId"],
  responses: {
    200: sealedArtifactBody,
    302: redirect,
  },
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
    return artifactDownloadResponse(d);
  },
});
