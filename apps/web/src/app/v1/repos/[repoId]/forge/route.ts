import { z } from "zod";
import { authenticateApiToken, getRepoForge } from "@kiln/engine";
import { services } from "@/server/context.ts";
import { webForgeConfig } from "@/server/env.ts";
import { json, route } from "@/server/http/route.ts";

export const dynamic = "force-dynamic";

/** GET /v1/repos/{repo_id}/forge: the repo's forge credential and delivery state (never the token). */
export const GET = route({
  path: "/v1/repos/{repo_id}/forge",
  summary:
    "The repo's forge loop: credential state (never the token), hook, rate-limit pause, reconciler, undelivered statuses",
  auth: "api_token",
  responses: { 200: { description: "the forge view", schema: z.record(z.string(), z.unknown()) } },
  uuidParams: ["repoId"],
  handler: async ({ req, params }) => {
    const { db } = services();
    const caller = await authenticateApiToken(db, req.headers.get("authorization"));
    return json(200, await getRepoForge(db, webForgeConfig(), { orgId: caller.orgId, repoId: params.repoId ?? "" }));
  },
});
