import type { Db } from "@kiln/db";
import { DomainError, ROLES, type Role } from "@kiln/domain";
import { hashSecret, newSecret } from "../identity/tokens.ts";

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

export async function addRepo(
  db: Db,
  input: { orgSlug: string; name: string; cloneUrl: string; webhookSecret: string; workflowPath: string },
): Promise<{ id: string; fullName: string }> {
  if (!/^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+$/.test(input.name))
    throw new DomainError("REQUEST.INVALID", "repo name must look like owner/name");
  if (!/^(file|https?):\/\//.test(input.cloneUrl))
    throw new DomainError("REQUEST.INVALID", "clone URL must be file://, http:// or https://");
  if (input.webhookSecret.length < 8)
    throw new DomainError("REQUEST.INVALID", "webhook secret must be at least 8 characters");
  if (input.workflowPath.startsWith("/") || input.workflowPath.split("/").includes(".."))
    throw new DomainError("REQUEST.INVALID", "workflow path must be relative");
  const orgId = await orgIdOf(db, input.orgSlug);
  const rows = await db.$queryRaw<{ id: string }[]>`
    INSERT INTO repo (org_id, full_name, clone_url, webhook_secret, workflow_path)
    VALUES (${orgId}::uuid, ${input.name}, ${input.cloneUrl}, ${input.webhookSecret}, ${input.workflowPath})
    ON CONFLICT (full_name) DO UPDATE SET clone_url = EXCLUDED.clone_url, webhook_secret = EXCLUDED.webhook_secret,
      workflow_path = EXCLUDED.workflow_path
    WHERE repo.org_id = EXCLUDED.org_id
    RETURNING id`;
  if (!rows[0]) throw new DomainError("REQUEST.INVALID", `${input.name} is registered to another org`);
  return { id: rows[0].id, fullName: input.name };
}

export async function addMember(
  db: Db,
  input: { orgSlug: string; login: string; role: string },
): Promise<{ userId: string }> {
  assertRole(input.role);
  const orgId = await orgIdOf(db, input.orgSlug);
  const users = await db.$queryRaw<{ id: string }[]>`
    INSERT INTO app_user (login) VALUES (${input.login}) ON CONFLICT (login) DO UPDATE SET login = EXCLUDED.login RETURNING id`;
  const userId = users[0]?.id;
  if (!userId) throw new Error("user upsert returned nothing");
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
