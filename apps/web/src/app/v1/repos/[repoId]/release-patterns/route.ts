import { authenticateApiToken, setReleasePatterns } from "@kiln/engine";
import { services } from "@/server/context.ts";
import { json, route } from "@/server/http/route.ts";
import { releasePatterns, releasePatternsBody } from "@/server/http/schemas/retention.ts";

export const dynamic = "force-dynamic";

/** Which of the repo's refs are releases besides tags (retention class "release"). Audited. */
export const PUT = route({
  path: "/v1/repos/{repo_id}/release-patterns",
  summary: "Set the repo's release ref patterns (globs; tags are always releases); admins",
  description:
    "`*` matches within a path segment, `**` across; a bare pattern names branches (release/* = refs/heads/release/*).",
  auth: "api_token",
  uuidParams: ["repoId"],
  body: releasePatternsBody,
  responses: { 200: { description: "the patterns", schema: releasePatterns } },
  handler: async ({ req, params, body }) => {
    const { db } = services();
    const caller = await authenticateApiToken(db, req.headers.get("authorization"));
    const actor = { orgId: caller.orgId, role: caller.role, actor: caller.name };
    return json(200, await setReleasePatterns(db, actor, { repoId: params.repoId ?? "", patterns: body.patterns }));
  },
});
