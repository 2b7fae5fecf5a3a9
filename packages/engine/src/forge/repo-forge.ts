import { withTx, type Db } from "@kiln/db";
import { recordAuditEvent } from "../audit/index.ts";
import { DomainError } from "@kiln/domain";
import type { ForgeConfig } from "./forge-config.ts";
import { proveRepoControl } from "./forge-identity.ts";
import { sealSecret } from "./secret-box.ts";

// A repo's forge settings (`kiln repo add --forge-token-file F --forge-hook-id N`) and their state
// as the CLI, the API and the dashboard show it. The token itself is never shown again.

export async function setRepoForge(
  db: Db,
  cfg: Pick<ForgeConfig, "secretsKey" | "apiUrl" | "requestTimeoutMs" | "app">,
  input: { repoId: string; token?: string | null; hookId?: number | null; actor: string },
): Promise<void> {
  let sealed: string | null | undefined;
  let proven: { repositoryId: number } | null = null;
  if (input.token !== undefined && input.token !== null) {
    const token = input.token.trim();
    if (!/^[\x21-\x7e]{8,1000}$/.test(token))
      throw new DomainError("REQUEST.INVALID", "forge token must be 8 to 1000 printable characters with no spaces");
    if (!cfg.secretsKey)
      throw new DomainError(
        "FORGE.NO_SECRETS_KEY",
        "KILN_SECRETS_KEY is not set: forge tokens are stored sealed with it (openssl rand -base64 32)",
      );
    sealed = sealSecret(cfg.secretsKey, token, input.repoId);
    // Issue 28: a token is stored only for a repo the forge shows it with push access; the forge's
    // repository id it answers is pinned (asked before the transaction: no request inside one).
    const named = await db.$queryRaw<
      { full_name: string }[]
    >`SELECT full_name FROM repo WHERE id = ${input.repoId}::uuid`;
    if (!named[0]) throw new DomainError("REPO.NOT_FOUND", "repository not found");
    proven = await proveRepoControl(cfg, named[0].full_name, `Bearer ${token}`);
  } else if (input.token === null) sealed = null;
  if (input.hookId !== undefined && input.hookId !== null && (!Number.isSafeInteger(input.hookId) || input.hookId < 1))
    throw new DomainError("REQUEST.INVALID", "forge hook id must be a positive integer");
  await withTx(db, "set-repo-forge", async (tx) => {
    const repo = await tx.$queryRaw<{ org_id: string; full_name: string; forge_repository_id: bigint | null }[]>`
      SELECT org_id, full_name, forge_repository_id FROM repo WHERE id = ${input.repoId}::uuid FOR UPDATE`;
    const r = repo[0];
    if (!r) throw new DomainError("REPO.NOT_FOUND", "repository not found");
    if (proven) {
      if (r.forge_repository_id !== null && Number(r.forge_repository_id) !== proven.repositoryId)
        throw new DomainError(
          "REPO.FORGE_UNVERIFIED",
          `the token sees forge repository ${proven.repositoryId}, not the one pinned on ${r.full_name}`,
        );
      await tx.$executeRaw`UPDATE repo SET forge_repository_id = ${proven.repositoryId} WHERE id = ${input.repoId}::uuid`;
    }
    await tx.$executeRaw`
      INSERT INTO repo_forge (repo_id, token_enc, hook_id) VALUES (${input.repoId}::uuid, ${sealed ?? null}, ${input.hookId ?? null})
      ON CONFLICT (repo_id) DO UPDATE SET
        token_enc = CASE WHEN ${sealed !== undefined} THEN EXCLUDED.token_enc ELSE repo_forge.token_enc END,
        hook_id = CASE WHEN ${input.hookId !== undefined} THEN EXCLUDED.hook_id ELSE repo_forge.hook_id END,
        updated_at = now()`;
    // Audited in the same transaction; the facts say what changed, never the token.
    await recordAuditEvent(tx, {
      orgId: r.org_id,
      kind: "repo.forge_settings_changed",
      actor: input.actor,
      subject: r.full_name,
      data: {
        token: sealed === undefined ? "unchanged" : sealed === null ? "cleared" : "stored",
        ...(proven ? { forge_repository_id: proven.repositoryId } : {}),
        ...(input.hookId !== undefined ? { hook_id: input.hookId } : {}),
      },
    });
  });
}

/** A repo's forge credential and delivery state (never the token). */
export interface RepoForgeView {
  repo_id: string;
  full_name: string;
  /** Which credential statuses go out with: per-repo token, App installation, or none (and why). */
  credential: "token" | "app" | "none";
  credential_problem: string | null;
  token_stored: boolean;
  app_installation_id: number | null;
  hook_id: number | null;
  /** The webhook URL the forge should deliver to (KILN_PUBLIC_URL + /v1/webhooks/github). */
  webhook_url: string | null;
  rate_limited_until: string | null;
  /** The missed-delivery reconciler's last pass over this repo's hook. */
  reconciler: {
    last_checked_at: string | null;
    last_error: string | null;
    last_seen_delivery_id: number;
    redeliveries_requested: number;
  } | null;
  /** The newest delivery Kiln received for this repo. */
  last_delivery: {
    delivery_id: string;
    event: string;
    outcome: string;
    received_at: string;
    run_id: string | null;
  } | null;
  /** Statuses not yet on the forge, across the repo's runs. */
  undelivered_statuses: number;
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);

/** Scoped by org in the query: another org's repo id answers REPO.NOT_FOUND like a missing one. */
export async function getRepoForge(
  db: Db,
  cfg: Pick<ForgeConfig, "secretsKey" | "app" | "publicUrl">,
  input: { orgId: string; repoId: string },
): Promise<RepoForgeView> {
  const rows = await db.$queryRaw<
    {
      id: string;
      full_name: string;
      token_enc: string | null;
      installation_id: bigint | null;
      hook_id: bigint | null;
      rate_until: Date | null;
      last_checked_at: Date | null;
      last_error: string | null;
      last_seen_delivery_id: bigint | null;
      redeliveries_requested: number | null;
      d_id: string | null;
      d_event: string | null;
      d_outcome: string | null;
      d_at: Date | null;
      d_run: string | null;
      undelivered: number;
    }[]
  >`
    SELECT r.id, r.full_name, f.token_enc, f.installation_id, f.hook_id,
           (SELECT until FROM forge_rate_limit WHERE until > now() AND credential_key IN ('repo:' || r.id::text, 'installation:' || f.installation_id::text)
             ORDER BY until DESC LIMIT 1) AS rate_until,
           c.last_checked_at, c.last_error, c.last_seen_delivery_id, c.redeliveries_requested,
           d.delivery_id AS d_id, d.event AS d_event, d.outcome AS d_outcome, d.received_at AS d_at, d.run_id AS d_run,
           (SELECT count(*)::int FROM forge_status s WHERE s.repo_id = r.id AND s.delivered_seq < s.desired_seq) AS undelivered
    FROM repo r
    LEFT JOIN repo_forge f ON f.repo_id = r.id
    LEFT JOIN forge_hook_cursor c ON c.hook_key = 'repo:' || r.id::text
    LEFT JOIN LATERAL (SELECT * FROM webhook_delivery w WHERE w.repo_id = r.id ORDER BY w.received_at DESC LIMIT 1) d ON true
    WHERE r.id = ${input.repoId}::uuid AND r.org_id = ${input.orgId}::uuid`;
  const r = rows[0];
  if (!r) throw new DomainError("REPO.NOT_FOUND", "repository not found");
  const credential = r.token_enc ? "token" : cfg.app && r.installation_id ? "app" : "none";
  const problem =
    r.token_enc && !cfg.secretsKey
      ? "a forge token is stored but KILN_SECRETS_KEY is not set"
      : r.installation_id && !cfg.app && !r.token_enc
        ? "webhooks name an App installation but no GitHub App is configured"
        : credential === "none"
          ? "no forge token and no GitHub App installation: statuses are not sent"
          : null;
  return {
    repo_id: r.id,
    full_name: r.full_name,
    credential,
    credential_problem: problem,
    token_stored: r.token_enc !== null,
    app_installation_id: r.installation_id === null ? null : Number(r.installation_id),
    hook_id: r.hook_id === null ? null : Number(r.hook_id),
    webhook_url: cfg.publicUrl ? `${cfg.publicUrl.replace(/\/+$/, "")}/v1/webhooks/github` : null,
    rate_limited_until: iso(r.rate_until),
    reconciler:
      r.last_checked_at || r.last_error
        ? {
            last_checked_at: iso(r.last_checked_at),
            last_error: r.last_error,
            last_seen_delivery_id: Number(r.last_seen_delivery_id ?? 0n),
            redeliveries_requested: r.redeliveries_requested ?? 0,
          }
        : null,
    last_delivery: r.d_id
      ? {
          delivery_id: r.d_id,
          event: r.d_event ?? "",
          outcome: r.d_outcome ?? "",
          received_at: iso(r.d_at) ?? "",
          run_id: r.d_run,
        }
      : null,
    undelivered_statuses: r.undelivered,
  };
}

/** The repo named `owner/name` and its org (the CLI addresses repos by name). */
export async function findRepoByName(db: Db, fullName: string): Promise<{ id: string; orgId: string }> {
  const rows = await db.$queryRaw<
    { id: string; org_id: string }[]
  >`SELECT id, org_id FROM repo WHERE lower(full_name) = lower(${fullName})`;
  const r = rows[0];
  if (!r) throw new DomainError("REPO.NOT_FOUND", `no repository ${fullName} is registered`);
  return { id: r.id, orgId: r.org_id };
}
