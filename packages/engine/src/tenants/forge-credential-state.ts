import type { DbOrTx } from "@kiln/db";

// THE SLOT the forge credential work (issue 19's "Statuses back to the forge", another branch)
// fills: a per-repo forge token (`repo add ... --forge-token-file`) or a GitHub App installation.
// Until that lands nothing stores a forge credential, so every repo truthfully has none and Kiln
// posts no statuses for it. When it lands, this function reads its table and answers the other
// states; the repositories page and GET /v1/orgs/{org}/repos show whatever it answers.

export type ForgeCredentialState =
  /** Nothing configured: no commit statuses are sent for this repo. */
  | { state: "none" }
  /** A per-repo token or an App installation; `checkedAt`/`problem` say whether the forge accepted it last time. */
  | { state: "token" | "app"; lastCheckedAt: string | null; problem: string | null };

export async function loadForgeCredentialStates(
  _db: DbOrTx,
  repoIds: readonly string[],
): Promise<Map<string, ForgeCredentialState>> {
  return new Map(repoIds.map((id) => [id, { state: "none" } as const]));
}
