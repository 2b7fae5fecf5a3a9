import { DomainError } from "@kiln/domain";
import { authenticateApiToken, listOrgRepos, orgSlugOf } from "@kiln/engine";
import { services } from "@/server/context.ts";
import { json, route } from "@/server/http/route.ts";
import { orgRepos } from "@/server/http/schemas/resources.ts";

export const dynamic = "force-dynamic";

/** The org's repositories; a token of another org gets the same 404 as an org that does not exist. */
export const GET = route({
  path: "/v1/orgs/{org}/repos",
  summary: "The org's repositories, connected first, each with its last webhook delivery",
  auth: "api_token",
  responses: { 200: { description: "the repositories", schema: orgRepos } },
  handler: async ({ req, params }) => {
    const { db } = services();
    const caller = await authenticateApiToken(db, req.headers.get("authorization"));
    // The org in the path must be the token's own: compared by id, in the token's org lookup.
    const slug = await orgSlugOf(db, caller.orgId);
    if (slug !== params.org) throw new DomainError("ORG.NOT_FOUND", "org not found");
    const repos = await listOrgRepos(db, { orgSlug: slug });
    return json(200, {
      repos: repos.map((r) => ({
        id: r.id,
        full_name: r.fullName,
        clone_url: r.cloneUrl,
        workflow_path: r.workflowPath,
        default_branch: r.defaultBranch,
        created_at: r.createdAt,
        disconnected_at: r.disconnectedAt,
        last_delivery: r.lastDelivery
          ? {
              delivery_id: r.lastDelivery.deliveryId,
              event: r.lastDelivery.event,
              outcome: r.lastDelivery.outcome,
              run_id: r.lastDelivery.runId,
              received_at: r.lastDelivery.receivedAt,
            }
          : null,
        forge_credential:
          r.forgeCredential.state === "none"
            ? { state: "none" }
            : {
                state: r.forgeCredential.state,
                last_checked_at: r.forgeCredential.lastCheckedAt,
                problem: r.forgeCredential.problem,
              },
      })),
    });
  },
});
