import { createSign } from "node:crypto";
import type { ForgeConfig } from "./forge-config.ts";
import { forgeRequest } from "./github-api.ts";

// GitHub App authentication ("Authenticating as a GitHub App"): a JWT signed RS256 with the App's
// private key (iss = App id, iat backdated 60 s for clock drift, exp at most 10 minutes on), traded
// for an installation access token per installation, which is cached until shortly before its
// expires_at. The private key stays in the control plane's processes; no sandbox ever sees it.

const b64url = (v: string | Buffer) => Buffer.from(v).toString("base64url");

export function createAppJwt(app: { id: number; privateKeyPem: string }, nowMs: number): string {
  const iat = Math.floor(nowMs / 1000) - 60;
  const header = b64url(JSON.stringify({ alg: "RS256", typ: "JWT" }));
  const payload = b64url(JSON.stringify({ iat, exp: iat + 540, iss: String(app.id) }));
  const signature = createSign("RSA-SHA256").update(`${header}.${payload}`).sign(app.privateKeyPem);
  return `${header}.${payload}.${b64url(signature)}`;
}

/** Tokens are refreshed this long before GitHub's expiry, so none expires mid-request. */
const REFRESH_MARGIN_MS = 5 * 60_000;

export class InstallationTokens {
  private readonly cache = new Map<number, { token: string; expiresAtMs: number }>();
  private readonly inflight = new Map<number, Promise<string>>();

  constructor(private readonly now: () => number = Date.now) {}

  async token(cfg: ForgeConfig, installationId: number): Promise<string> {
    const hit = this.cache.get(installationId);
    if (hit && hit.expiresAtMs - REFRESH_MARGIN_MS > this.now()) return hit.token;
    // Concurrent deliveries for one installation share one exchange.
    const pending = this.inflight.get(installationId);
    if (pending) return pending;
    const p = this.exchange(cfg, installationId).finally(() => this.inflight.delete(installationId));
    this.inflight.set(installationId, p);
    return p;
  }

  /** Drops a token the forge refused (revoked, or the installation's permissions changed). */
  forget(installationId: number): void {
    this.cache.delete(installationId);
  }

  private async exchange(cfg: ForgeConfig, installationId: number): Promise<string> {
    if (!cfg.app) throw new Error("no GitHub App configured");
    const r = await forgeRequest<{ token: string; expires_at: string }>(cfg, {
      method: "POST",
      path: `/app/installations/${installationId}/access_tokens`,
      auth: `Bearer ${createAppJwt(cfg.app, this.now())}`,
    });
    const expiresAtMs = Date.parse(r.body.expires_at);
    this.cache.set(installationId, {
      token: r.body.token,
      expiresAtMs: Number.isFinite(expiresAtMs) ? expiresAtMs : this.now() + 3_000_000,
    });
    return r.body.token;
  }
}
