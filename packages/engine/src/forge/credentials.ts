import type { Db } from "@kiln/db";
import { isDomainError } from "@kiln/domain";
import { InstallationTokens } from "./app-auth.ts";
import type { ForgeConfig } from "./forge-config.ts";
import { openSecret } from "./secret-box.ts";

/** How Kiln authenticates to the forge for one repo. `key` names it for rate-limit pauses. */
export type ForgeCredential =
  | { kind: "token"; auth: string; key: string }
  | { kind: "app"; auth: string; key: string; installationId: number }
  | { kind: "none"; reason: string };

export interface RepoForgeRow {
  repo_id: string;
  token_enc: string | null;
  installation_id: bigint | null;
  hook_id: bigint | null;
}

// One cache per process: installation tokens live an hour and are worth reusing across jobs.
const installationTokens = new InstallationTokens();

/**
 * A per-repo token wins when one is stored (the operator chose it for this repo); otherwise the
 * GitHub App, when it is configured and the repo's webhooks named an installation. Only the App
 * can write check runs (the Checks API refuses other tokens).
 */
export async function credentialFor(cfg: ForgeConfig, row: RepoForgeRow | null): Promise<ForgeCredential> {
  if (row?.token_enc) {
    if (!cfg.secretsKey) return { kind: "none", reason: "a forge token is stored but KILN_SECRETS_KEY is not set" };
    try {
      const token = openSecret(cfg.secretsKey, row.token_enc, row.repo_id);
      return { kind: "token", auth: `Bearer ${token}`, key: `repo:${row.repo_id}` };
    } catch (err) {
      if (isDomainError(err)) return { kind: "none", reason: err.message };
      throw err;
    }
  }
  if (cfg.app && row?.installation_id) {
    const installationId = Number(row.installation_id);
    const token = await installationTokens.token(cfg, installationId);
    return { kind: "app", auth: `Bearer ${token}`, key: `installation:${installationId}`, installationId };
  }
  if (row?.installation_id)
    return { kind: "none", reason: "webhooks name an App installation but no GitHub App is configured" };
  return { kind: "none", reason: "no forge token and no GitHub App installation" };
}

export function forgetInstallationToken(installationId: number): void {
  installationTokens.forget(installationId);
}

export async function loadRepoForge(db: Db, repoId: string): Promise<RepoForgeRow | null> {
  const rows = await db.$queryRaw<RepoForgeRow[]>`
    SELECT repo_id, token_enc, installation_id, hook_id FROM repo_forge WHERE repo_id = ${repoId}::uuid`;
  return rows[0] ?? null;
}
