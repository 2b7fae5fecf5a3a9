import type { Db } from "@kiln/db";
import { DomainError, type RunFilters } from "@kiln/domain";
import { scopeOfApiCaller } from "../tenants/resolve-tenant.ts";
import { listRuns, type RunPage } from "./list-runs.ts";

/**
 * GET /v1/repos/{repo_id}/workflow-runs: one repo's runs, newest first, filtered, with the keyset
 * cursor of the dashboard's runs list (stable under inserts: a page never repeats or skips a run
 * that existed when the first page was read). A repo of another org is REPO.NOT_FOUND, as is one
 * that never existed; a disconnected repo still lists its history.
 */
export async function listRepoRuns(
  db: Db,
  /** An API token's caller (authenticateApiToken). */
  caller: { orgId: string; tokenId: string },
  input: { repoId: string; filters: Omit<RunFilters, "repoId">; cursor: string | null; limit: number },
): Promise<RunPage> {
  const repo = await db.$queryRaw<{ id: string }[]>`
    SELECT id FROM repo WHERE id = ${input.repoId}::uuid AND org_id = ${caller.orgId}::uuid`;
  if (!repo[0]) throw new DomainError("REPO.NOT_FOUND", "repository not found");
  return listRuns(db, scopeOfApiCaller(caller), {
    filters: { ...input.filters, repoId: input.repoId },
    cursor: input.cursor,
    limit: input.limit,
  });
}
