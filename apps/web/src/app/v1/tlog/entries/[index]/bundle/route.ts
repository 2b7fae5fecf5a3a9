import { z } from "zod";
import { attestationBundleForLogIndex, authenticateApiToken, engineTlog } from "@kiln/engine";
import { services } from "@/server/context.ts";
import { json, route } from "@/server/http/route.ts";
import { treeNumber } from "../../../_lib/params.ts";

export const dynamic = "force-dynamic";

/**
 * GET /v1/tlog/entries/{index}/bundle (issue 28): the attestation behind a log entry, as the
 * Sigstore bundle plus its log evidence and the leaf's salt (what `kiln verify` needs). The public
 * log holds only a commitment; the envelope goes to the entry's org (the caller's token's org, in
 * the query) or, without a token, only for a repo marked public. Anything else is the same 404.
 */
export const GET = route({
  path: "/v1/tlog/entries/{index}/bundle",
  summary: "The attestation bundle (envelope, leaf salt, proof) behind a log entry: the org's, or a public repo's",
  auth: "api_token",
  responses: { 200: { description: "the bundle and its log evidence", schema: z.record(z.string(), z.unknown()) } },
  handler: async ({ req, params }) => {
    const { db } = services();
    const index = treeNumber(params.index, "index") as number;
    // A token, when sent, must be good (401 otherwise); none means an anonymous reader.
    const auth = req.headers.get("authorization");
    const orgId = auth ? (await authenticateApiToken(db, auth)).orgId : null;
    return json(200, await attestationBundleForLogIndex(db, engineTlog, { orgId, index: BigInt(index) }));
  },
});
