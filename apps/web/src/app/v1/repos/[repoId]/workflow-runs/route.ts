import path from "node:path";
import {
  admitManualRun,
  authenticateApiToken,
  forgeCredentialForFetch,
  listRepoRuns,
  manualTriggerBody,
} from "@kiln/engine";
import { services } from "@/server/context.ts";
import { env, webForgeConfig } from "@/server/env.ts";
import { json, route } from "@/server/http/route.ts";
import { runCreated, runListPage, runListQuery } from "@/server/http/schemas/runs.ts";

export const dynamic = "force-dynamic";

export const GET = route({
  path: "/v1/repos/{repo_id}/workflow-runs",
  summary: "The repo's runs, newest first, filtered, cursor-paginated",
  description:
    "Filters are exact and combine with AND. The cursor is a keyset position (created_at, id): pages never repeat or skip a run, whatever is admitted meanwhile.",
  auth: "api_token",
  uuidParams: ["repoId"],
  query: runListQuery,
  responses: { 200: { description: "one page of runs", schema: runListPage } },
  handler: async ({ req, params, query }) => {
    const { db } = services();
    const caller = await authenticateApiToken(db, req.headers.get("authorization"));
    const page = await listRepoRuns(db, caller, {
      repoId: params.repoId ?? "",
      filters: {
        ...(query.branch ? { branch: query.branch } : {}),
        ...(query.event ? { trigger: query.event } : {}),
        ...(query.outcome ? { outcome: query.outcome } : {}),
        ...(query.status ? { status: query.status } : {}),
        ...(query.created_before ? { createdBefore: query.created_before } : {}),
        ...(query.created_after ? { createdAfter: query.created_after } : {}),
      },
      cursor: query.cursor ?? null,
      limit: query.per_page,
    });
    return json(200, { workflow_runs: page.runs, next_cursor: page.next_cursor });
  },
});

export const POST = route({
  path: "/v1/repos/{repo_id}/workflow-runs",
  summary: "Start a run of a workflow at a commit (manual trigger)",
  description:
    "`ref` (a branch, refs/heads/… or refs/tags/…; default: the repo's default branch) must contain the commit, else 422 RUN.COMMIT_NOT_ON_REF / REPO.REF_NOT_FOUND. A disconnected repo answers 409 REPO.DISCONNECTED.",
  auth: "api_token",
  body: manualTriggerBody,
  uuidParams: ["repoId"],
  headers: { "Idempotency-Key": { description: "1-255 characters; a replay answers the first run", required: true } },
  responses: { 202: { description: "admitted", schema: runCreated } },
  handler: async ({ req, params, body }) => {
    const { db } = services();
    const e = env();
    const caller = await authenticateApiToken(db, req.headers.get("authorization"));
    const r = await admitManualRun(db, {
      caller,
      repoId: params.repoId ?? "",
      idempotencyKey: req.headers.get("idempotency-key"),
      body,
      // Its own mirrors: the workers' (workflow fetch at freeze) are shallow and owned by them.
      source: {
        gitCacheDir: path.resolve(e.KILN_DATA_DIR, "git-ref-check"),
        policy: { localReposRoot: e.KILN_LOCAL_REPOS_ROOT ?? null },
        // A private repo's ref is fetched with its forge credential (issue 28).
        credential: (repo) => forgeCredentialForFetch(db, webForgeConfig(), repo.id, repo.cloneUrl),
      },
    });
    return json(202, { run_id: r.runId });
  },
});
