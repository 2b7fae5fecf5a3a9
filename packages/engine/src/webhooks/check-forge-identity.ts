import { DomainError } from "@kiln/domain";
import { type ForgeConfig, repoInstallationId } from "../forge/index.ts";
import type { SqlPool } from "../shared/sql-pool.ts";

/**
 * Forge identity (issue 28, ADR 0028 amended). The forge's repository id is pinned on first sight
 * and must match on every later event. An `installation.id` is believed only from a delivery signed
 * with the App's webhook secret, and bound to the repo only after the App's API confirms that this
 * installation is the one on this repository; a repo-signed delivery naming one is refused, so no
 * tenant can point Kiln's App credential at another tenant's installation.
 */
export async function checkForgeIdentity(
  sql: SqlPool,
  forge: Pick<ForgeConfig, "apiUrl" | "requestTimeoutMs" | "app"> | undefined,
  repo: {
    id: string;
    full_name: string;
    forge_repository_id: string | null;
    installation_id: string | null;
    installation_confirmed: boolean;
  },
  viaApp: boolean,
  payload: { repository: { id?: number | undefined }; installation?: { id: number } | undefined },
): Promise<void> {
  const forgeRepoId = payload.repository.id ?? null;
  if (repo.forge_repository_id !== null && String(forgeRepoId) !== repo.forge_repository_id)
    throw new DomainError(
      "WEBHOOK.REPOSITORY_MISMATCH",
      `repository.id ${forgeRepoId ?? "(none)"} is not the forge repository pinned on ${repo.full_name}`,
    );
  const installationId = payload.installation?.id ?? null;
  if (installationId !== null && !viaApp)
    throw new DomainError(
      "WEBHOOK.INSTALLATION_UNVERIFIED",
      "installation.id is accepted only on deliveries signed with the GitHub App's webhook secret",
    );
  if (repo.forge_repository_id === null && forgeRepoId !== null)
    await sql.query({
      name: "webhook-pin-repo",
      text: "UPDATE repo SET forge_repository_id = $2::bigint WHERE id = $1::uuid AND forge_repository_id IS NULL",
      values: [repo.id, forgeRepoId],
    });
  if (installationId === null) return;
  if (repo.installation_confirmed && repo.installation_id === String(installationId)) return;
  // First sight (or a changed installation): ask the App's API which installation is on this repo.
  const confirmed = forge ? await repoInstallationId(forge, repo.full_name).catch(() => null) : null;
  if (confirmed !== installationId)
    throw new DomainError(
      "WEBHOOK.INSTALLATION_UNVERIFIED",
      `the App's API does not confirm installation ${installationId} on ${repo.full_name}`,
    );
  await sql.query({
    name: "webhook-installation-2",
    text: `INSERT INTO repo_forge (repo_id, installation_id, installation_confirmed_at) VALUES ($1::uuid, $2::bigint, now())
           ON CONFLICT (repo_id) DO UPDATE SET installation_id = EXCLUDED.installation_id,
             installation_confirmed_at = EXCLUDED.installation_confirmed_at, updated_at = now()`,
    values: [repo.id, installationId],
  });
}
