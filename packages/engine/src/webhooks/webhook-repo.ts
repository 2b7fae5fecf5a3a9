import { DomainError } from "@kiln/domain";
import type { ForgeConfig } from "../forge/index.ts";
import type { SqlPool } from "../shared/sql-pool.ts";
import { verifyGithubSignature } from "./verify-signature.ts";

/** The repo a delivery names, with what admission needs of it and of the sender's membership. */
export type WebhookRepo = {
  id: string;
  org_id: string;
  full_name: string;
  webhook_secret: string;
  workflow_path: string;
  disconnected: boolean;
  actor_is_member: boolean;
  forge_repository_id: string | null;
  installation_id: string | null;
  installation_confirmed: boolean;
};

/**
 * The repo the payload names, and whether the delivery is signed by it (or by the GitHub App):
 * WEBHOOK.BAD_SIGNATURE otherwise. `viaApp` says the App's secret signed it.
 */
export async function authenticateDelivery(
  sql: SqlPool,
  req: {
    rawBody: Uint8Array;
    signature: string | null;
    forge?: Pick<ForgeConfig, "app"> | undefined;
  },
  fullName: string,
  peekedActorId: number | null,
): Promise<{ repo: WebhookRepo; viaApp: boolean }> {
  const repos = await sql.query<WebhookRepo>({
    name: "webhook-repo-3",
    // By name up to case (GitHub's matching; names are unique that way, migration 0026).
    text: `SELECT r.id, r.org_id, r.full_name, r.webhook_secret, r.workflow_path, r.disconnected_at IS NOT NULL AS disconnected,
                  r.forge_repository_id::text, f.installation_id::text, f.installation_confirmed_at IS NOT NULL AS installation_confirmed,
                  ($2::bigint IS NOT NULL AND EXISTS (SELECT 1 FROM membership ms JOIN app_user u ON u.id = ms.user_id
                     WHERE ms.org_id = r.org_id AND u.forge_id = $2::bigint AND ms.role IN ('admin', 'member'))) AS actor_is_member
           FROM repo r LEFT JOIN repo_forge f ON f.repo_id = r.id WHERE lower(r.full_name) = lower($1)`,
    values: [fullName, peekedActorId],
  });
  const repo = repos.rows[0];
  // GitHub signs an App's deliveries with the App's webhook secret, which no tenant knows; a repo's
  // own hook with the secret its org chose. Only the former is evidence of what GitHub says.
  const appSecret = req.forge?.app?.webhookSecret;
  const viaApp = !!repo && !!appSecret && verifyGithubSignature(appSecret, req.rawBody, req.signature);
  // Same answer as a bad signature: an unauthenticated caller learns nothing about which repos exist.
  if (!repo || !(viaApp || verifyGithubSignature(repo.webhook_secret, req.rawBody, req.signature))) {
    throw new DomainError("WEBHOOK.BAD_SIGNATURE", "signature does not match a registered repository's secret");
  }
  return { repo, viaApp };
}
