import { withTx, type Db } from "@kiln/db";
import { DomainError, isBranchName, ROLES, type Role } from "@kiln/domain";
import { checkCloneUrl, isCloneUrlError, type SourcePolicy } from "@kiln/oci";
import { hashSecret, newSecret } from "../identity/index.ts";

// Tenant administration shared by the `kiln` CLI, `npm run up` and tests.

const SLUG = /^[a-z0-9][a-z0-9-]{0,62}$/;

function assertRole(role: string): asserts role is Role {
  if (!(ROLES as readonly string[]).includes(role))
    throw new DomainError("REQUEST.INVALID", `role must be one of ${ROLES.join(", ")}`);
}

async function orgIdOf(db: Db, slug: string): Promise<string> {
  const rows = await db.$queryRaw<{ id: string }[]>`SELECT id FROM org WHERE slug = ${slug}`;
  if (!rows[0]) throw new DomainError("REQUEST.INVALID", `no org named ${slug}`);
  return rows[0].id;
}

export async function createOrg(db: Db, slug: string): Promise<{ id: string; slug: string; created: boolean }> {
  if (!SLUG.test(slug))
    throw new DomainError("REQUEST.INVALID", "org slug must be lowercase letters, digits and dashes");
  const ins = await db.$queryRaw<
    { id: string }[]
  >`INSERT INTO org (slug) VALUES (${slug}) ON CONFLICT (slug) DO NOTHING RETURNING id`;
  if (ins[0]) return { id: ins[0].id, slug, created: true };
  return { id: await orgIdOf(db, slug), slug, created: false };
}

/**
 * Registers (or re-points) a repo. The clone URL is checked against the source policy here, so a
 * refused URL is named at once (REPO.CLONE_URL_REFUSED, details.reason = the SOURCE.* rule); the
 * workers and agents check it again before every git run. `source` is the operator's setting:
 * without it only https:// URLs are accepted (docs/adr/0017).
 */
export async function addRepo(
  db: Db,
  input: {
    orgSlug: string;
    name: string;
    cloneUrl: string;
    webhookSecret: string;
    workflowPath: string;
    /** A branch name (default "main"): manual triggers' default ref and every run's fallback cache ref. */
    defaultBranch?: string;
  },
  source: SourcePolicy = { localReposRoot: null },
): Promise<{ id: string; fullName: string }> {
  if (!/^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+$/.test(input.name))
    throw new DomainError("REQUEST.INVALID", "repo name must look like owner/name");
  try {
    checkCloneUrl(input.cloneUrl, source);
  } catch (err) {
    if (isCloneUrlError(err)) throw new DomainError("REPO.CLONE_URL_REFUSED", err.message, { reason: err.code });
    throw err;
  }
  if (input.webhookSecret.length < 8)
    throw new DomainError("REQUEST.INVALID", "webhook secret must be at least 8 characters");
  if (input.workflowPath.startsWith("/") || input.workflowPath.split("/").includes(".."))
    throw new DomainError("REQUEST.INVALID", "workflow path must be relative");
  const branch = input.defaultBranch ?? "main";
  if (!isBranchName(branch))
    throw new DomainError("REQUEST.INVALID", "default branch must be a branch name such as main (no refs/heads/)");
  const orgId = await orgIdOf(db, input.orgSlug);
  const rows = await db.$queryRaw<{ id: string }[]>`
    INSERT INTO repo (org_id, full_name, clone_url, webhook_secret, workflow_path, default_branch)
    VALUES (${orgId}::uuid, ${input.name}, ${input.cloneUrl}, ${input.webhookSecret}, ${input.workflowPath}, ${branch})
    ON CONFLICT (full_name) DO UPDATE SET clone_url = EXCLUDED.clone_url, webhook_secret = EXCLUDED.webhook_secret,
      workflow_path = EXCLUDED.workflow_path, default_branch = EXCLUDED.default_branch
    WHERE repo.org_id = EXCLUDED.org_id
    RETURNING id`;
  if (!rows[0]) throw new DomainError("REQUEST.INVALID", `${input.name} is registered to another org`);
  return { id: rows[0].id, fullName: input.name };
}

/**
 * Adds (or re-roles) a member. `forgeId` is the forge's numeric user id (GitHub `user.id`), which is
 * what webhook senders and GitHub sign-ins are matched by: a login can be renamed and then taken by
 * another account. With an id, the user is found by it (a rename updates the stored login); a user
 * without one is never matched for trust. A login already recorded for another id is refused.
 */
export async function addMember(
  db: Db,
  input: { orgSlug: string; login: string; role: string; forgeId?: number | null },
): Promise<{ userId: string }> {
  assertRole(input.role);
  const forgeId = input.forgeId ?? null;
  if (forgeId !== null && (!Number.isSafeInteger(forgeId) || forgeId < 1))
    throw new DomainError("REQUEST.INVALID", "forge id must be a positive integer (GitHub's user id)");
  if (!/^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$/.test(input.login))
    throw new DomainError("REQUEST.INVALID", "login must be letters, digits, dashes, dots or underscores");
  const orgId = await orgIdOf(db, input.orgSlug);
  const userId = await withTx(db, "add-member-user", async (tx) => {
    const holders = await tx.$queryRaw<{ id: string; forge_id: bigint | null; login: string }[]>`
      SELECT id, forge_id, login FROM app_user WHERE login = ${input.login} OR (${forgeId}::bigint IS NOT NULL AND forge_id = ${forgeId}::bigint)
      FOR UPDATE`;
    const byId = forgeId === null ? undefined : holders.find((u) => u.forge_id === BigInt(forgeId));
    const byLogin = holders.find((u) => u.login === input.login);
    if (byLogin && byLogin !== byId && byLogin.forge_id !== null && forgeId !== null)
      throw new DomainError(
        "REQUEST.INVALID",
        `login ${input.login} is recorded for forge id ${byLogin.forge_id}; if that account was renamed, add it under its new login first`,
      );
    if (byId) {
      // The same account under a new login: keep its memberships, follow the rename.
      if (byLogin && byLogin !== byId)
        throw new DomainError("REQUEST.INVALID", `login ${input.login} belongs to another user without a forge id`);
      await tx.$executeRaw`UPDATE app_user SET login = ${input.login} WHERE id = ${byId.id}::uuid`;
      return byId.id;
    }
    if (byLogin) {
      if (forgeId !== null)
        await tx.$executeRaw`UPDATE app_user SET forge_id = ${forgeId}::bigint WHERE id = ${byLogin.id}::uuid`;
      return byLogin.id;
    }
    const rows = await tx.$queryRaw<{ id: string }[]>`
      INSERT INTO app_user (login, forge_id) VALUES (${input.login}, ${forgeId}::bigint) RETURNING id`;
    const id = rows[0]?.id;
    if (!id) throw new Error("user insert returned nothing");
    return id;
  });
  await db.$executeRaw`
    INSERT INTO membership (org_id, user_id, role) VALUES (${orgId}::uuid, ${userId}::uuid, ${input.role})
    ON CONFLICT (org_id, user_id) DO UPDATE SET role = EXCLUDED.role`;
  return { userId };
}

/** The token is returned once; only its hash is stored. It expires after 90 days unless told otherwise. */
export async function createApiToken(
  db: Db,
  input: { orgSlug: string; role: string; name?: string; expiresInDays?: number },
): Promise<{ id: string; token: string; expiresAt: string }> {
  assertRole(input.role);
  const days = input.expiresInDays ?? 90;
  if (!Number.isInteger(days) || days < 1 || days > 366)
    throw new DomainError("REQUEST.INVALID", "expiry must be a whole number of days from 1 to 366");
  const orgId = await orgIdOf(db, input.orgSlug);
  const token = newSecret("kiln");
  const rows = await db.$queryRaw<{ id: string; expires_at: Date }[]>`
    INSERT INTO api_token (org_id, role, name, token_hash, expires_at)
    VALUES (${orgId}::uuid, ${input.role}, ${input.name ?? "cli"}, ${hashSecret(token)}, now() + make_interval(days => ${days}::int))
    RETURNING id, expires_at`;
  return { id: rows[0]?.id ?? "", token, expiresAt: rows[0]?.expires_at.toISOString() ?? "" };
}

/** A host credential for one pool; with `orgSlug` (an org owns the pool) it claims only that org's jobs. */
export async function createAgentToken(
  db: Db,
  input: { pool: string; orgSlug?: string; name?: string },
): Promise<{ id: string; token: string; pool: string }> {
  if (!/^[a-z0-9][a-z0-9-]{0,62}$/.test(input.pool))
    throw new DomainError("REQUEST.INVALID", "pool must be lowercase letters, digits and dashes");
  const orgId = input.orgSlug ? await orgIdOf(db, input.orgSlug) : null;
  const token = newSecret("kagent");
  const rows = await db.$queryRaw<{ id: string }[]>`
    INSERT INTO agent_token (pool, org_id, name, token_hash)
    VALUES (${input.pool}, ${orgId}::uuid, ${input.name ?? "host"}, ${hashSecret(token)}) RETURNING id`;
  return { id: rows[0]?.id ?? "", token, pool: input.pool };
}
