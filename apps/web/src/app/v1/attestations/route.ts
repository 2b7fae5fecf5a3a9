import { DomainError } from "@kiln/domain";
import { authenticateApiToken, findAttestations, type AttestationQuery } from "@kiln/engine";
import { services } from "@/server/context.ts";
import { json, route } from "@/server/http/route.ts";

export const dynamic = "force-dynamic";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Exactly one filter: ?subject_digest=sha256:<hex>, ?commit=<sha or prefix> or ?run_id=<uuid>. */
function queryOf(u: URL): AttestationQuery {
  const digest = u.searchParams.get("subject_digest");
  const commit = u.searchParams.get("commit");
  const run = u.searchParams.get("run_id");
  if ([digest, commit, run].filter((x) => x !== null).length !== 1)
    throw new DomainError("REQUEST.INVALID", "give exactly one of subject_digest, commit, run_id");
  if (digest !== null) {
    const m = /^sha256:([0-9a-f]{64})$/.exec(digest);
    if (!m?.[1]) throw new DomainError("REQUEST.INVALID", "subject_digest must be sha256:<64 lowercase hex>");
    return { subjectSha256: m[1] };
  }
  if (commit !== null) {
    if (!/^[0-9a-f]{7,40}$/.test(commit)) throw new DomainError("REQUEST.INVALID", "commit must be 7 to 40 hex digits");
    return { commit };
  }
  if (!UUID.test(run ?? "")) throw new DomainError("REQUEST.INVALID", "run_id must be a UUID");
  return { runId: run ?? "" };
}

/** GET /v1/attestations: provenance search within the caller's org (the org is in the query). */
export const GET = route({
  handler: async ({ req }) => {
    const { db } = services();
    const caller = await authenticateApiToken(db, req.headers.get("authorization"));
    return json(200, { attestations: await findAttestations(db, caller.orgId, queryOf(new URL(req.url))) });
  },
});
