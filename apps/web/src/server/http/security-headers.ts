// HTTP hardening applied by the proxy (dashboard pages, tRPC, sign-in). The headers every response
// carries (nosniff, Referrer-Policy, X-Frame-Options) and /v1's CSP are set in next.config.ts.

/**
 * The dashboard's policy. Scripts run only with this response's nonce ('strict-dynamic' lets the
 * chunks Next's nonced bootstrap loads run too); no plugins, no framing, forms post only here.
 * Styles allow 'unsafe-inline' because React renders style attributes (the log viewer's virtual
 * rows, the job graph), which nonces cannot cover; style injection cannot run script.
 */
export function dashboardCsp(nonce: string, dev: boolean): string {
  return [
    "default-src 'self'",
    `script-src 'self' 'nonce-${nonce}' 'strict-dynamic'${dev ? " 'unsafe-eval'" : ""}`,
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' blob: data:",
    "font-src 'self'",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'self'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join("; ");
}

/** A fresh nonce per response: 128 random bits, base64. */
export function newNonce(): string {
  const bytes = new Uint8Array(16);
  crypto.getRandomValues(bytes);
  return Buffer.from(bytes).toString("base64");
}

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/**
 * CSRF defence for the cookie-authenticated dashboard: a state-changing request (tRPC mutations,
 * sign-in and sign-out, server actions) must name this site as its Origin. Browsers always send
 * Origin on such requests, so a missing one is refused too. Null when the request may proceed.
 */
export function crossOriginRefusal(
  req: { method: string; headers: Headers },
  expectedOrigin: string | null,
): string | null {
  if (SAFE_METHODS.has(req.method.toUpperCase())) return null;
  const origin = req.headers.get("origin");
  if (!origin) return "a state-changing request must carry an Origin header";
  if (expectedOrigin !== null) return origin === expectedOrigin ? null : `origin ${origin} is not ${expectedOrigin}`;
  // No public URL configured: the origin must be the host this request was addressed to.
  const host = req.headers.get("host");
  if (!URL.canParse(origin)) return `origin ${origin} is not a URL`;
  return host && new URL(origin).host === host ? null : `origin ${origin} is not this site`;
}
