// Where a secret lives: an org, or one of its repos. Resolved with the caller's org in the query,
// so another org's repo id is REPO.NOT_FOUND exactly like one that never existed.
import type { DbOrTx } from "@kiln/db";
import { DomainError, reservedEnvNameProblem, secretNameProblem } from "@kiln/domain";
import type { SecretScope } from "./envelope.ts";

export interface SecretTarget {
  orgId: string;
  repoId: string | null;
  scope: SecretScope;
  /** Issue 18: an environment's secrets (scope env:<id>, repoId its repo's). */
  environmentId?: string | null;
}

function scopeOf(repoId: string | null): SecretScope {
  return repoId === null ? "org" : `repo:${repoId}`;
}

export function assertSecretName(name: string): void {
  const reserved = reservedEnvNameProblem(name);
  if (reserved) throw new DomainError("WORKFLOW.ENV_NAME_RESERVED", `secret name ${JSON.stringify(name)} ${reserved}`);
  const problem = secretNameProblem(name);
  if (problem) throw new DomainError("SECRET.INVALID_NAME", `secret name ${JSON.stringify(name)} ${problem}`);
}

/** An org's secrets, or (with repoId) a repo's, for a caller already known to belong to orgId. */
export async function targetById(db: DbOrTx, orgId: string, repoId: string | null): Promise<SecretTarget> {
  if (repoId === null) return { orgId, repoId: null, scope: "org" };
  const rows = await db.$queryRaw<{ id: string }[]>`
    SELECT id FROM repo WHERE id = ${repoId}::uuid AND org_id = ${orgId}::uuid`;
  if (!rows[0]) throw new DomainError("REPO.NOT_FOUND", "no such repository in this org");
  return { orgId, repoId, scope: scopeOf(repoId) };
}

/**
 * `<org>` or `<org>/<repo>` as the CLI takes it. A repo is named by its full name (`owner/name`)
 * or by the name after the owner, within the org.
 */
export async function targetBySlug(db: DbOrTx, spec: string): Promise<SecretTarget & { label: string }> {
  const slash = spec.indexOf("/");
  const slug = slash === -1 ? spec : spec.slice(0, slash);
  const repo = slash === -1 ? null : spec.slice(slash + 1);
  const orgs = await db.$queryRaw<{ id: string }[]>`SELECT id FROM org WHERE slug = ${slug}`;
  const org = orgs[0];
  if (!org) throw new DomainError("ORG.NOT_FOUND", `no org named ${slug}`);
  if (repo === null || repo === "") return { orgId: org.id, repoId: null, scope: "org", label: slug };
  const repos = await db.$queryRaw<{ id: string; full_name: string }[]>`
    SELECT id, full_name FROM repo
    WHERE org_id = ${org.id}::uuid AND (full_name = ${repo} OR split_part(full_name, '/', 2) = ${repo})`;
  const exact = repos.find((r) => r.full_name === repo);
  const hit = exact ?? (repos.length === 1 ? repos[0] : undefined);
  if (!hit)
    throw new DomainError(
      "REPO.NOT_FOUND",
      repos.length > 1 ? `${repo} is ambiguous in ${slug}; use owner/name` : `no repo ${repo} in ${slug}`,
    );
  return { orgId: org.id, repoId: hit.id, scope: scopeOf(hit.id), label: `${slug}/${hit.full_name}` };
}
