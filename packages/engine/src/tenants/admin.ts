import { withTx, type Db } from "@kiln/db";
import { DomainError, isBranchName, ROLES, type Role } from "@kiln/domain";
import { checkCloneUrl, isCloneUrlError, type SourcePolicy } from "@kiln/oci";
import { recordAuditEvent } from "../audit/index.ts";
import { hashSecret, newSecret } from "../identity/index.ts";

// Tenant administration shared by the `kiln` CLI, `npm run up` and tests.

const SLUG = /^[a-z0-9][a-z0-9-]{0,62}$/;

/** Who the audit trail names when a caller (fixtures, `npm run up`) gives no actor. */
export const UNNAMED_ACTOR = "system:admin";

export function assertRole(role: string): asserts role is Role {
  if (!(ROLES as readonly string[]).includes(role))
    throw new DomainError("REQUEST.INVALID", `role must be one of ${ROLES.join(", ")}`);
}

export async function orgIdOf(db: Db, slug: string): Promise<string> {
  const rows = await db.$queryRaw<{ id: string }[]>`SELECT id FROM org WHERE slug = ${slug}`;
  if (!rows[0]) throw new DomainError("REQUEST.INVALID", `no org named ${slug}`);
  return rows[0].id;
}

/** The slug of an org id (an API token's org), for routes that name the org in their path. */
export async function orgSlugOf(db: Db, orgId: string): Promise<string> {
  const rows = await db.$queryRaw<{ slug: string }[]>`SELECT slug FROM org WHERE id = ${orgId}::uuid`;
  if (!rows[0]) throw new DomainError("ORG.NOT_FOUND", "org not found");
  return rows[0].slug;
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
    /** Refuse (REPO.ALREADY_CONNECTED) instead of re-pointing a connected repo: the dashboard's connect. */
    onlyIfNotConnected?: boolean;
    actor?: string;
  },
  source: SourcePolicy = { localReposRoot: null },
): Promise<{ id: string; fullName: string; reconnected: boolean }> {
  if (!/^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+$/.test(input.name))
    throw new DomainError("REQUEST.INVALID", "repo name must look like owner/name");
  try {
    checkCloneUrl(input.cloneUrl, source);
  } catch (err) {
    if (isCloneUrlError(err)) throw new DomainError("REPO.CLONE_URL_REFUSED", err.message, { reason: err.code });
    throw err;
  }
  // Issue 28: a credential in the URL would be stored in clear and named in every statement the
  // attestor signs; it belongs in the sealed forge token (docs/forge.md). Message without the URL.
  if (/^[a-z][a-z0-9+.-]*:\/\/[^/?#]*@/i.test(input.cloneUrl))
    throw new DomainError(
      "REPO.CLONE_URL_REFUSED",
      "clone URL carries credentials (user:token@): register the plain URL and put the token in the forge settings (--forge-token-file)",
      { reason: "SOURCE.CREDENTIALS_IN_URL" },
    );
  if (input.webhookSecret.length < 8)
    throw new DomainError("REQUEST.INVALID", "webhook secret must be at least 8 characters");
  if (input.workflowPath.startsWith("/") || input.workflowPath.split("/").includes(".."))
    throw new DomainError("REQUEST.INVALID", "workflow path must be relative");
  const branch = input.defaultBranch ?? "main";
  if (!isBranchName(branch))
    throw new DomainError("REQUEST.INVALID", "default branch must be a branch name such as main (no refs/heads/)");
  const orgId = await orgIdOf(db, input.orgSlug);
  return withTx(db, "add-repo", async (tx) => {
    // Adding a disconnected repo again reconnects it (docs/adr/0029): same id, history kept.
    // Up to case (issue 28): GitHub treats Acme/App and acme/app as one repository, so Kiln does too.
    const prior = await tx.$queryRaw<{ org_id: string; full_name: string; disconnected: boolean }[]>`
      SELECT org_id, full_name, disconnected_at IS NOT NULL AS disconnected FROM repo
      WHERE lower(full_name) = lower(${input.name}) FOR UPDATE`;
    const was = prior[0];
    if (was && was.full_name !== input.name)
      throw new DomainError(
        "REPO.NAME_TAKEN",
        `${was.org_id === orgId ? `${was.full_name} is registered` : "a repository of that name is registered to another org"}; names differing only by case are one repository on the forge`,
      );
    if (was && was.org_id !== orgId)
      throw new DomainError("REQUEST.INVALID", `${input.name} is registered to another org`);
    if (was && !was.disconnected && input.onlyIfNotConnected)
      throw new DomainError("REPO.ALREADY_CONNECTED", `${input.name} is already connected; disconnect it first`);
    const rows = await tx.$queryRaw<{ id: string }[]>`
      INSERT INTO repo (org_id, full_name, clone_url, webhook_secret, workflow_path, default_branch)
      VALUES (${orgId}::uuid, ${input.name}, ${input.cloneUrl}, ${input.webhookSecret}, ${input.workflowPath}, ${branch})
      ON CONFLICT (full_name) DO UPDATE SET clone_url = EXCLUDED.clone_url, webhook_secret = EXCLUDED.webhook_secret,
        workflow_path = EXCLUDED.workflow_path, default_branch = EXCLUDED.default_branch, disconnected_at = NULL
      WHERE repo.org_id = EXCLUDED.org_id
      RETURNING id`;
    const id = rows[0]?.id;
    if (!id) throw new DomainError("REQUEST.INVALID", `${input.name} is registered to another org`);
    await recordAuditEvent(tx, {
      orgId,
      kind: was ? (was.disconnected ? "repo.reconnected" : "repo.updated") : "repo.connected",
      actor: input.actor ?? UNNAMED_ACTOR,
      subject: input.name,
      // Never the webhook secret: only that it was (re)set.
      data: {
        repo_id: id,
        clone_url: input.cloneUrl,
        workflow_path: input.workflowPath,
        default_branch: branch,
        secret_set: true,
      },
    });
    return { id, fullName: input.name, reconnected: was?.disconnected ?? false };
  });
}

/** The token is returned once; only its hash is stored. It expires after 90 days unless told otherwise. */
export async function createApiToken(
  db: Db,
  input: { orgSlug: string; role: string; name?: string; expiresInDays?: number; actor?: string },
): Promise<{ id: string; token: string; expiresAt: string; name: string; role: Role }> {
  assertRole(input.role);
  const role = input.role;
  const days = input.expiresInDays ?? 90;
  if (!Number.isInteger(days) || days < 1 || days > 366)
    throw new DomainError("REQUEST.INVALID", "expiry must be a whole number of days from 1 to 366");
  const name = input.name ?? "cli";
  const control = [...name].some((c) => c.charCodeAt(0) < 32 || c.charCodeAt(0) === 127);
  if (name.length < 1 || name.length > 64 || control || name.trim() !== name)
    throw new DomainError("REQUEST.INVALID", "token name must be 1-64 printable characters without surrounding spaces");
  const orgId = await orgIdOf(db, input.orgSlug);
  const token = newSecret("kiln");
  return withTx(db, "create-api-token", async (tx) => {
    const rows = await tx.$queryRaw<{ id: string; expires_at: Date }[]>`
      INSERT INTO api_token (org_id, role, name, token_hash, expires_at)
      VALUES (${orgId}::uuid, ${role}, ${name}, ${hashSecret(token)}, now() + make_interval(days => ${days}::int))
      RETURNING id, expires_at`;
    const row = rows[0];
    if (!row) throw new Error("api_token insert returned nothing");
    await recordAuditEvent(tx, {
      orgId,
      kind: "api_token.created",
      actor: input.actor ?? UNNAMED_ACTOR,
      subject: row.id,
      data: { name, role, expires_at: row.expires_at.toISOString() },
    });
    return { id: row.id, token, expiresAt: row.expires_at.toISOString(), name, role };
  });
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
