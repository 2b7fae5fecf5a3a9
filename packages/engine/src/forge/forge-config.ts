import type { SecretsKey } from "./secret-box.ts";

/** What the forge loop needs from the environment (mapped from env by engine-env.ts). */
export interface ForgeConfig {
  /** KILN_GITHUB_API_URL: GitHub, GitHub Enterprise (https://host/api/v3) or a compatible forge. */
  apiUrl: string;
  /** KILN_PUBLIC_URL: the dashboard's public origin; statuses link to run pages under it. */
  publicUrl: string | null;
  /** KILN_SECRETS_KEY: seals per-repo forge tokens at rest. */
  secretsKey: SecretsKey | null;
  /** KILN_GITHUB_APP_ID + KILN_GITHUB_APP_PRIVATE_KEY_FILE (+ KILN_GITHUB_APP_WEBHOOK_SECRET: the only
   * signature an `installation.id` is believed from; issue 28). */
  app: { id: number; privateKeyPem: string; webhookSecret?: string } | null;
  /** Per-request bound; a delivery lease is longer, so a lease never lapses under a live request. */
  requestTimeoutMs: number;
}

export const DEFAULT_FORGE_CONFIG: ForgeConfig = {
  apiUrl: "https://api.github.com",
  publicUrl: null,
  secretsKey: null,
  app: null,
  requestTimeoutMs: 10_000,
};

/** The URL a repo's (or the App's) webhook points at, as Kiln itself serves it. */
export function kilnWebhookUrl(cfg: ForgeConfig): string | null {
  return cfg.publicUrl ? `${cfg.publicUrl.replace(/\/+$/, "")}/v1/webhooks/github` : null;
}
