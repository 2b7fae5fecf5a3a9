// The per-attempt ID token endpoint inside the sandbox (issue 16, docs/adr/0024): a step runs
//   curl -H "Authorization: Bearer $KILN_ID_TOKEN_REQUEST_TOKEN" "$KILN_ID_TOKEN_URL?audience=<aud>"
// and gets {"value": "<jwt>"}. It is served on the attempt's own egress-proxy listener, the one way
// out the sandbox already has on both drivers, so no new channel reaches the host. The request
// token is random per attempt and compared here; only then does the agent ask the control plane,
// with the job token the sandbox never sees. Every answer is framed (Content-Length): a guestfwd
// connection never shows the guest a close.
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import type http from "node:http";
import { AUDIENCE_PATTERN } from "@kiln/domain";
import type { Logger } from "@kiln/logger";
import { describeFailure, type ControlClient, type JobTicket } from "../control-client.ts";

/** The path on the sandbox's proxy address (KILN_ID_TOKEN_URL = <proxy URL> + this). */
export const ID_TOKEN_PATH = "/_kiln/id-token";
// A step looping on the endpoint must not turn into a flood at the control plane.
const MAX_IN_FLIGHT = 4;
const MINT_TIMEOUT_MS = 10_000;

export interface IdTokenEndpoint {
  /** For the step environment (KILN_ID_TOKEN_REQUEST_TOKEN). */
  readonly requestToken: string;
  /** Answers one origin-form request to ID_TOKEN_PATH on the attempt's listener. */
  handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void>;
  /** The attempt is over (stopped, fenced, finished): every later request is refused here. */
  close(): void;
}

function digest(s: string): Buffer {
  return createHash("sha256").update(s, "utf8").digest();
}

function answer(res: http.ServerResponse, status: number, body: object): void {
  const bytes = Buffer.from(JSON.stringify(body));
  if (res.headersSent) return void res.destroy();
  res.writeHead(status, {
    "Content-Type": "application/json",
    "Content-Length": String(bytes.length),
    "Cache-Control": "no-store",
  });
  res.end(bytes);
}

export function openIdTokenEndpoint(deps: { client: ControlClient; ticket: JobTicket; log: Logger }): IdTokenEndpoint {
  const requestToken = `kirt_${randomBytes(32).toString("base64url")}`;
  const expected = digest(requestToken);
  let closed = false;
  let inFlight = 0;
  return {
    requestToken,
    close: () => {
      closed = true;
    },
    handle: async (req, res) => {
      const url = new URL(req.url ?? "/", "http://sandbox.invalid");
      if (url.pathname !== ID_TOKEN_PATH) return answer(res, 404, { error: "not found" });
      if (req.method !== "GET") return answer(res, 405, { error: "use GET" });
      const m = /^Bearer\s+(\S+)$/i.exec(req.headers.authorization ?? "");
      // Fixed-length digests: the comparison's time says nothing about the token.
      if (!m?.[1] || !timingSafeEqual(digest(m[1]), expected))
        return answer(res, 401, { error: "missing or wrong request token (KILN_ID_TOKEN_REQUEST_TOKEN)" });
      if (closed) return answer(res, 409, { error: "this attempt is over" });
      const audience = url.searchParams.get("audience") ?? "";
      if (!AUDIENCE_PATTERN.test(audience))
        return answer(res, 400, { error: "audience=<relying party> is required (1-200 printable characters)" });
      if (inFlight >= MAX_IN_FLIGHT) return answer(res, 429, { error: "too many ID token requests at once" });
      inFlight++;
      try {
        const r = await deps.client.mintIdToken(
          deps.ticket.jobId,
          deps.ticket.jobToken,
          { epoch: deps.ticket.epoch, audience },
          { timeoutMs: MINT_TIMEOUT_MS },
        );
        if (r.ok) return answer(res, 200, { value: r.data.value });
        deps.log.warn("id token refused", { failure: describeFailure(r) });
        // 409: the attempt is not current any more (the control plane's word); else unavailable.
        if (r.kind === "http" && r.status === 409) return answer(res, 409, { error: "this attempt is not current" });
        // A decision, not an outage (issue 28): retrying will not help, so the step is told why.
        if (r.kind === "http" && r.code === "ID_TOKEN.UNTRUSTED_REFUSED")
          return answer(res, 403, { error: r.message, code: r.code });
        return answer(res, 502, { error: "the control plane could not mint a token; try again" });
      } finally {
        inFlight--;
      }
    },
  };
}
