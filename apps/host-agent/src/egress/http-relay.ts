// The proxy's HTTP plumbing: framed answers of its own and plain-HTTP forwarding. Everything the
// proxy says carries a Content-Length, and relayed bodies keep theirs or are re-chunked by Node,
// because a guestfwd connection never shows the guest a close (feasibility notes).
import http from "node:http";
import type { Socket } from "node:net";
import type { Duplex } from "node:stream";
import { errorMessage } from "@kiln/logger";

// Hop-by-hop headers (RFC 9110 7.6.1) plus the proxy's own: never forwarded either way.
const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "proxy-authorization",
  "proxy-authenticate",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
]);

/** A complete, framed response the proxy writes itself (errors and denials). */
export function writeFramed(
  target: Duplex | http.ServerResponse,
  status: number,
  message: string,
  headers: Record<string, string>,
  close = false,
): void {
  const body = Buffer.from(`${message}\n`, "utf8");
  // Header values must stay one printable line whatever a client put in its request.
  const safe = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, v.replace(/[^\x20-\x7e]/g, "?")]));
  const all = {
    "Content-Type": "text/plain; charset=utf-8",
    "Content-Length": String(body.length),
    ...safe,
    ...(close ? { Connection: "close" } : {}),
  };
  if (target instanceof http.ServerResponse) {
    if (target.headersSent) return void target.destroy();
    target.writeHead(status, all);
    target.end(body);
    return;
  }
  if (target.destroyed || !target.writable) return;
  const head = Object.entries(all)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join("");
  target.end(
    Buffer.concat([
      Buffer.from(`HTTP/1.1 ${status} ${http.STATUS_CODES[status] ?? ""}\r\n${head}\r\n`, "latin1"),
      body,
    ]),
  );
}

function endToEndHeaders(headers: http.IncomingHttpHeaders): http.OutgoingHttpHeaders {
  const connectionTokens = String(headers.connection ?? "")
    .toLowerCase()
    .split(",")
    .map((t) => t.trim());
  const out: http.OutgoingHttpHeaders = {};
  for (const [k, v] of Object.entries(headers)) {
    if (v === undefined || HOP_BY_HOP.has(k) || connectionTokens.includes(k)) continue;
    out[k] = v;
  }
  return out;
}

/** Forwards an absolute-form request over a connection to an already-admitted address. */
export function relayHttp(
  req: http.IncomingMessage,
  res: http.ServerResponse,
  to: { socket: Socket; path: string; hostHeader: string; timeoutMs: number },
): void {
  const upstream = http.request({
    // No agent: this one connection, to the address that was checked, serves this one request.
    createConnection: () => to.socket,
    method: req.method,
    path: to.path,
    setHost: false,
    // The Host the decision was made on, not whatever else the client put in its headers.
    headers: { ...endToEndHeaders(req.headers), host: to.hostHeader },
    timeout: to.timeoutMs,
  });
  upstream.once("timeout", () => upstream.destroy(new Error("upstream timed out")));
  upstream.once("error", (err) =>
    writeFramed(res, 502, `kiln egress: ${to.hostHeader} failed (${errorMessage(err).slice(0, 200)})`, {}),
  );
  upstream.once("response", (up) => {
    upstream.setTimeout(0);
    res.writeHead(up.statusCode ?? 502, up.statusMessage, endToEndHeaders(up.headers));
    up.pipe(res);
    up.once("error", () => res.destroy());
  });
  req.pipe(upstream);
  res.once("close", () => {
    upstream.destroy();
    to.socket.destroy();
  });
}
