import { z } from "zod";
import { authenticateApiToken, setProvenanceVisibility } from "@kiln/engine";
import { services } from "@/server/context.ts";
import { json, route } from "@/server/http/route.ts";

export const dynamic = "force-dynamic";

const body = z.strictObject({ public: z.boolean() });
const answer = z.object({
  repo_id: z.uuid(),
  full_name: z.string(),
  provenance_public: z.boolean(),
  changed: z.boolean(),
});

/**
 * Issue 28: whether anyone may read this repo's attestation envelopes (GET
 * /v1/tlog/entries/{index}/bundle without a token). Default private: its org's members and
 * auditors only; the public log holds commitments either way. Admins; audited.
 */
export const PUT = route({
  path: "/v1/repos/{repo_id}/provenance-visibility",
  summary: "Make the repo's attestation envelopes public or private (default private); admins",
  auth: "api_token",
  uuidParams: ["repoId"],
  body,
  responses: { 200: { description: "the repo's provenance visibility", schema: answer } },
  handler: async ({ req, params, body: b }) => {
    const { db } = services();
    const caller = await authenticateApiToken(db, req.headers.get("authorization"));
    return json(
      200,
      await setProvenanceVisibility(db, {
        orgId: caller.orgId,
        role: caller.role,
        repo: { id: params.repoId ?? "" },
        public: b.public,
        actor: `token:${caller.tokenId}`,
      }),
    );
  },
});
