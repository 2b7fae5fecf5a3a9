import { attestationBundleForArtifact, authenticateApiToken, engineTlog } from "@kiln/engine";
import { services } from "@/server/context.ts";
import { json, route } from "@/server/http/route.ts";

export const dynamic = "force-dynamic";

/**
 * GET /v1/artifacts/{artifact_id}/attestation: the Sigstore bundle v0.3 plus the transparency-log
 * evidence. Scoped to the caller's org in the query: another org's artifact is a 404.
 */
export const GET = route({
  uuidParams: ["artifactId"],
  handler: async ({ req, params }) => {
    const { db } = services();
    const caller = await authenticateApiToken(db, req.headers.get("authorization"));
    return json(
      200,
      await attestationBundleForArtifact(db, engineTlog, { orgId: caller.orgId, artifactId: params.artifactId ?? "" }),
    );
  },
});
