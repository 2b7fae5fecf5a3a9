// The client side of registry auth (distribution's "token authentication specification"): a 401
// names a scheme in WWW-Authenticate. Basic: resend with the configured credentials. Bearer: ask
// the realm for a token for the named service and scope (with the credentials as Basic, or
// anonymously), then resend with it. Tokens are cached per scope until they expire.
import { ImageError } from "./errors.ts";
import { isLoopbackHost } from "./reference.ts";
import type { HostPolicy, RegistryFetch } from "./registry-fetch.ts";

export interface Challenge {
  scheme: "basic" | "bearer";
  params: Record<string, string>;
}

/** Parses `Bearer realm="https://auth/token",service="reg",scope="repository:a:pull,push"`. */
export function parseChallenge(header: string | null): Challenge | null {
  if (!header) return null;
  const m = /^\s*(\w+)\s*(.*)$/s.exec(header);
  if (!m) return null;
  const scheme = m[1]!.toLowerCase();
  if (scheme !== "basic" && scheme !== "bearer") return null;
  const params: Record<string, string> = {};
  for (const p of m[2]!.matchAll(/([A-Za-z_][\w-]*)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^,\s]*))/g)) {
    params[p[1]!.toLowerCase()] = (p[2] ?? p[3] ?? "").replace(/\\(.)/g, "$1");
  }
  return { scheme, params };
}

export interface Credentials {
  username: string;
  password: string;
}

export function basicHeader(c: Credentials): string {
  return `Basic ${Buffer.from(`${c.username}:${c.password}`, "utf8").toString("base64")}`;
}

interface CachedToken {
  token: string;
  expiresAt: number;
}

export class TokenCache {
  private readonly tokens = new Map<string, CachedToken>();

  get(scope: string): string | null {
    const t = this.tokens.get(scope);
    return t && t.expiresAt > Date.now() ? t.token : null;
  }

  /** Fetches a token from the challenge's realm. Errors are ImageErrors (UNAUTHORIZED / UNREACHABLE). */
  async fetch(
    challenge: Challenge,
    scope: string,
    creds: Credentials | null,
    fetchImpl: RegistryFetch,
    hosts: HostPolicy,
  ): Promise<string> {
    const realm = challenge.params.realm;
    if (!realm) throw new ImageError("IMAGE.UNAUTHORIZED", "registry asked for a bearer token but named no realm");
    let url: URL;
    try {
      url = new URL(realm);
    } catch {
      throw new ImageError(
        "IMAGE.UNAUTHORIZED",
        `registry token realm ${JSON.stringify(realm.slice(0, 200))} is not a URL`,
      );
    }
    // The realm comes from the registry's answer: never send credentials to it in clear text.
    if (url.protocol !== "https:" && !(url.protocol === "http:" && isLoopbackHost(url.host))) {
      throw new ImageError(
        "IMAGE.INSECURE",
        `refusing token realm ${url.origin}: only https (or loopback http) may receive credentials`,
      );
    }
    // The realm is named by the registry's answer: it gets the credentials and we act on its reply,
    // so it must be a host the operator configured for this registry (its own, or an authHost).
    if (!hosts(url))
      throw new ImageError(
        "IMAGE.HOST_NOT_ALLOWED",
        `refusing token realm ${url.origin}: not a host configured for this registry (authHosts in KILN_REGISTRIES)`,
      );
    if (challenge.params.service) url.searchParams.set("service", challenge.params.service);
    const wanted = challenge.params.scope ?? scope;
    if (wanted) url.searchParams.set("scope", wanted);
    let res: Response;
    try {
      res = await fetchImpl(url, {
        headers: creds ? { authorization: basicHeader(creds) } : {},
        signal: AbortSignal.timeout(30_000),
      });
    } catch (err) {
      if (err instanceof ImageError) throw err;
      throw new ImageError("IMAGE.UNREACHABLE", `token realm ${url.origin} unreachable: ${(err as Error).message}`);
    }
    if (res.status >= 500)
      throw new ImageError("IMAGE.UNREACHABLE", `token realm ${url.origin} answered ${res.status}`);
    if (!res.ok)
      throw new ImageError("IMAGE.UNAUTHORIZED", `token realm ${url.origin} refused (${res.status}) scope ${wanted}`);
    const body = (await res.json().catch(() => ({}))) as {
      token?: unknown;
      access_token?: unknown;
      expires_in?: unknown;
    };
    const token =
      typeof body.token === "string" ? body.token : typeof body.access_token === "string" ? body.access_token : null;
    if (!token) throw new ImageError("IMAGE.UNAUTHORIZED", `token realm ${url.origin} returned no token`);
    // The spec's default lifetime is 60 s; renew a little early so a request never carries a stale one.
    const ttl = typeof body.expires_in === "number" && body.expires_in > 0 ? body.expires_in : 60;
    this.tokens.set(scope, { token, expiresAt: Date.now() + Math.max(1, ttl - 10) * 1000 });
    return token;
  }
}
