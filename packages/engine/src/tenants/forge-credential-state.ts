import type { DbOrTx } from "@kiln/db";

// A repo's forge credential as the admin console lists it: a per-repo token (`repo add ...
// --forge-token-file`, sealed in repo_forge) or a GitHub App installation the repo's webhooks named
// (docs/adr/0028). `lastCheckedAt`/`problem` are the missed-delivery reconciler's last pass over the
// repo's hook, the one regular call that proves the forge still accepts the credential. The full
// view (rate-limit pauses, undelivered statuses) is GET /v1/repos/{repo_id}/forge.

export type ForgeCredentialState =
  /** Nothing configured: no commit statuses are sent for this repo. */
  | { state: "none" }
  /** A per-repo token or an App installation; `checkedAt`/`problem` say whether the forge accepted it last time. */
  | { state: "token" | "app"; lastCheckedAt: string | null; problem: string | null };

export async function loadForgeCredentialStates(
  db: DbOrTx,
  repoIds: readonly string[],
): Promise<Map<string, ForgeCredentialState>> {
  const rows =
    repoIds.length === 0
      ? []
      : await db.$queryRaw<
          { repo_id: string; token: boolean; app: boolean; last_checked_at: Date | null; last_error: string | null }[]
        >`
    SELECT f.repo_id::text, f.token_enc IS NOT NULL AS token, f.installation_id IS NOT NULL AS app,
           c.last_checked_at, c.last_error
    FROM repo_forge f LEFT JOIN forge_hook_cursor c ON c.hook_key = 'repo:' || f.repo_id::text
    WHERE f.repo_id = ANY(${[...repoIds]}::uuid[])`;
  const byRepo = new Map(rows.map((r) => [r.repo_id, r]));
  return new Map(
    repoIds.map((id): [string, ForgeCredentialState] => {
      const r = byRepo.get(id);
      if (!r || (!r.token && !r.app)) return [id, { state: "none" }];
      return [
        id,
        {
          state: r.token ? "token" : "app",
          lastCheckedAt: r.last_checked_at?.toISOString() ?? null,
          problem: r.last_error,
        },
      ];
    }),
  );
}
