import { NextResponse, type NextRequest } from "next/server";
import { isNextDev, publicOrigin } from "@/server/auth/env.ts";
import { crossOriginRefusal, dashboardCsp, newNonce } from "@/server/http/security-headers.ts";

/**
 * Every dashboard request (pages, tRPC, sign-in/out; not /v1, whose machine clients send no
 * Origin and whose hot paths should not pay for a proxy hop): refuses cross-origin state changes,
 * and gives each page a fresh CSP nonce. Next reads the nonce from the request's CSP header and
 * puts it on its own script tags; the pages are dynamically rendered, so every response gets its own.
 */
export function proxy(req: NextRequest): NextResponse {
  const refusal = crossOriginRefusal(req, publicOrigin());
  if (refusal) {
    const res = NextResponse.json(
      { error: { code: "REQUEST.CROSS_ORIGIN", message: refusal } },
      { status: 403, headers: { "cache-control": "no-store" } },
    );
    res.headers.set("content-security-policy", "default-src 'none'; frame-ancestors 'none'");
    return res;
  }
  const nonce = newNonce();
  const csp = dashboardCsp(nonce, isNextDev());
  const requestHeaders = new Headers(req.headers);
  requestHeaders.set("x-nonce", nonce);
  requestHeaders.set("content-security-policy", csp);
  const res = NextResponse.next({ request: { headers: requestHeaders } });
  res.headers.set("content-security-policy", csp);
  return res;
}

export const config = {
  // Static assets carry their headers from next.config.ts; /v1, /tlog/ (the transparency log's
  // checkpoint and tiles), /healthz, /metrics (Prometheus, bearer token) and /.well-known (the OIDC discovery document and JWKS, fetched
  // by relying parties, ADR 0024) are machine paths.
  matcher: ["/((?!v1/|v1$|tlog/|healthz|metrics$|\\.well-known/|_next/static|_next/image|favicon.ico).*)"],
};
