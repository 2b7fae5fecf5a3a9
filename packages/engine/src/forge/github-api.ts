import { nextLink } from "@kiln/domain";
import type { ForgeConfig } from "./forge-config.ts";

// GitHub's REST API as Kiln uses it (commit statuses, check runs, hooks and deliveries, App
// installation tokens): plain fetch, one timeout per request, and every answer classified so the
// callers can tell a rate limit (wait as long as the forge says) from an outage (back off) from a
// refusal (retrying will not help).

export type ForgeFailureKind = "rate_limited" | "unavailable" | "unauthorised" | "refused";

export class ForgeApiError extends Error {
  constructor(
    readonly kind: ForgeFailureKind,
    readonly status: number | null,
    message: string,
    /** For rate limits: how long the forge asked us to wait. */
    readonly retryAfterMs: number | null = null,
  ) {
    super(message);
    this.name = "ForgeApiError";
  }
}

export interface ForgeResponse<T> {
  status: number;
  body: T;
  /** rel="next" of the Link header (cursor pagination), absolute. */
  next: string | null;
}

/** GitHub's guidance for a secondary limit without Retry-After: wait at least a minute. */
const SECONDARY_DEFAULT_WAIT_MS = 60_000;

export async function forgeRequest<T>(
  cfg: Pick<ForgeConfig, "apiUrl" | "requestTimeoutMs">,
  req: { method: string; path: string; auth: string; body?: unknown; now?: () => number },
): Promise<ForgeResponse<T>> {
  const url = /^https?:\/\//.test(req.path) ? req.path : `${cfg.apiUrl.replace(/\/+$/, "")}${req.path}`;
  let res: Response;
  try {
    res = await fetch(url, {
      method: req.method,
      headers: {
        accept: "application/vnd.github+json",
        "x-github-api-version": "2022-11-28",
        "user-agent": "kiln-ci",
        authorization: req.auth,
        ...(req.body !== undefined ? { "content-type": "application/json" } : {}),
      },
      ...(req.body !== undefined ? { body: JSON.stringify(req.body) } : {}),
      signal: AbortSignal.timeout(cfg.requestTimeoutMs),
      redirect: "error",
    });
  } catch (err) {
    throw new ForgeApiError(
      "unavailable",
      null,
      `forge unreachable: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
  const text = await res.text().catch(() => "");
  const body = parseJson(text);
  if (res.ok) return { status: res.status, body: body as T, next: nextLink(res.headers.get("link")) };
  const message = (body as { message?: unknown } | null)?.message;
  const what =
    `${req.method} ${new URL(url).pathname}: ${res.status} ${typeof message === "string" ? message : ""}`.trim();
  const wait = rateLimitWait(res, typeof message === "string" ? message : "", (req.now ?? Date.now)());
  if (wait !== null) throw new ForgeApiError("rate_limited", res.status, what, wait);
  if (res.status >= 500) throw new ForgeApiError("unavailable", res.status, what);
  if (res.status === 401) throw new ForgeApiError("unauthorised", res.status, what);
  throw new ForgeApiError("refused", res.status, what);
}

/**
 * GitHub's rate-limit answers ("Rate limits for the REST API"): 429, or 403 with
 * x-ratelimit-remaining: 0 (primary; wait until x-ratelimit-reset) or with Retry-After or a
 * "secondary rate limit" message. Null when the answer is not a rate limit (a plain 403 is a
 * permissions refusal).
 */
export function rateLimitWait(
  res: Pick<Response, "status" | "headers">,
  message: string,
  nowMs: number,
): number | null {
  if (res.status !== 403 && res.status !== 429) return null;
  const retryAfter = res.headers.get("retry-after");
  if (retryAfter !== null) {
    const s = Number(retryAfter);
    if (Number.isFinite(s)) return Math.max(1_000, s * 1000);
    const at = Date.parse(retryAfter);
    if (Number.isFinite(at)) return Math.max(1_000, at - nowMs);
  }
  if (res.headers.get("x-ratelimit-remaining") === "0") {
    const reset = Number(res.headers.get("x-ratelimit-reset"));
    if (Number.isFinite(reset) && reset > 0) return Math.max(1_000, reset * 1000 - nowMs);
  }
  if (res.status === 429 || /rate limit/i.test(message)) return SECONDARY_DEFAULT_WAIT_MS;
  return null;
}

function parseJson(text: string): unknown {
  try {
    return text ? JSON.parse(text) : null;
  } catch {
    return null;
  }
}
