// The host's egress proxy (docs/adr/0013-mediated-egress.md): one process-wide HTTP server that
// never listens itself. Each sandbox gets its own listener (a unix socket for the process driver,
// a 127.0.0.1 TCP port for QEMU's guestfwd), whose connections are handed to the shared server
// tagged with their attempt, so every request is attributed to exactly one attempt and judged by
// that attempt's ticket policy. It speaks CONNECT (TLS) and absolute-form plain HTTP, resolves
// names itself (sandboxes have no DNS), and frames every answer it writes (Content-Length or
// chunked): a guestfwd connection does not pass a close on to the guest, so EOF cannot end a body.
import http from "node:http";
import { lookup } from "node:dns/promises";
import net from "node:net";
import type { Duplex } from "node:stream";
import { decideEgress, decideResolvedAddress, type EgressDecision, type TrustClass } from "@kiln/domain";
import type { JobTicket } from "../control-client.ts";
import { errorMessage, type Logger } from "@kiln/logger";
import { classifyAddress } from "@kiln/oci";
import { relayHttp, writeFramed } from "./http-relay.ts";
import { listen, type ListenerHandle } from "./egress-listener.ts";
import { SANDBOX_PROXY_AUTHORITIES, type EgressListenerAddress } from "./egress-registry.ts";
import type { IdTokenEndpoint } from "../identity/index.ts";

type EgressPolicy = NonNullable<JobTicket["egress"]>;

/**
 * One internal-address check for everything Kiln connects to on a tenant's behalf (issue 28): the
 * outbound fetch policy's classifier, so the proxy refuses NAT64, benchmarking, IETF-protocol,
 * documentation and every spelling of IPv4-mapped IPv6 exactly as registry fetches do.
 */
export function isInternalDestination(address: string): boolean {
  return classifyAddress(address) !== "public";
}

export interface EgressDecisionEvent {
  host: string;
  port: number;
  decision: "allowed" | "denied";
  reason: string;
}

export interface AttemptEgressSpec {
  attemptId: string;
  trustClass: TrustClass;
  /** The ticket's policy; absent (an older control plane) means nothing is reachable. */
  policy: EgressPolicy | undefined;
  listen: "unix" | "tcp";
  onDecision(e: EgressDecisionEvent): void;
  /** Called with the denial line; the attempt writes it into the job's stderr log. */
  onDenied(line: string): void;
  /**
   * The attempt's ID token endpoint (docs/adr/0024), answered for origin-form requests on this
   * listener (the sandbox addresses the proxy itself); absent, such requests are refused as before.
   */
  idTokens?: Pick<IdTokenEndpoint, "handle">;
}

export interface EgressProxyOptions {
  /** Where per-attempt unix sockets are created (beside the sandboxes, never inside one). */
  socketDir: string;
  /** Let allowed names resolve to loopback/private addresses (on-premises mirrors, local tests). */
  allowInternalAddresses: boolean;
  logger: Logger;
  connectTimeoutMs?: number;
}

interface Attempt {
  spec: AttemptEgressSpec;
  handle: ListenerHandle;
}

export class EgressProxy {
  private readonly server = http.createServer({ requestTimeout: 0, keepAliveTimeout: 30_000 });
  private readonly owner = new WeakMap<Duplex, Attempt>();
  private readonly attempts = new Map<string, Attempt>();

  constructor(private readonly opts: EgressProxyOptions) {
    this.server.on("request", (req, res) => void this.onRequest(req, res));
    this.server.on("connect", (req, socket, head) => void this.onConnect(req, socket, head));
    this.server.on("clientError", (_err, socket) =>
      writeFramed(socket, 400, "kiln egress: malformed proxy request", {}, true),
    );
  }

  /** Opens the attempt's own listener; its connections are judged by its policy only. */
  async open(spec: AttemptEgressSpec): Promise<{ address: EgressListenerAddress; close: () => Promise<void> }> {
    if (this.attempts.has(spec.attemptId)) throw new Error(`egress listener for ${spec.attemptId} already open`);
    const entry: Attempt = { spec, handle: null as unknown as ListenerHandle };
    entry.handle = await listen(spec.listen, spec.attemptId, this.opts.socketDir, (socket) => {
      this.owner.set(socket, entry);
      this.server.emit("connection", socket);
    });
    this.attempts.set(spec.attemptId, entry);
    return {
      address: entry.handle.address,
      close: async () => {
        this.attempts.delete(spec.attemptId);
        await entry.handle.close();
      },
    };
  }

  /** Closes every listener (agent shutdown). */
  async close(): Promise<void> {
    await Promise.all([...this.attempts.values()].map((a) => a.handle.close()));
    this.attempts.clear();
  }

  private judge(a: Attempt, host: string, port: number): EgressDecision {
    const policy = a.spec.policy;
    return decideEgress({
      host,
      port,
      trustClass: a.spec.trustClass,
      allowList: policy?.allowList ?? [],
    });
  }

  /**
   * Decides, resolves and re-checks every address; reports and, on denial, announces. A name with
   * any disallowed address is denied as a whole (no choosing the harmless half of a mixed answer).
   */
  private async admit(
    a: Attempt,
    host: string,
    port: number,
  ): Promise<{ ok: true; addresses: string[] } | { ok: false; line: string }> {
    let decision = this.judge(a, host, port);
    let addresses: string[] = [];
    if (decision.allowed) {
      const literal = host.replace(/^\[|\]$/g, "");
      try {
        addresses = net.isIP(literal) ? [literal] : (await lookup(host, { all: true })).map((r) => r.address);
      } catch (err) {
        a.spec.onDecision({ host: host.toLowerCase(), port, decision: "denied", reason: "dns_failed" });
        return { ok: false, line: `kiln egress: ${host} could not be resolved (${errorMessage(err).slice(0, 100)})` };
      }
      for (const address of addresses) {
        if (!decision.allowed) break;
        decision = decideResolvedAddress(decision, {
          host,
          port,
          internal: isInternalDestination(address),
          trustClass: a.spec.trustClass,
          allowInternal: this.opts.allowInternalAddresses,
        });
      }
    }
    a.spec.onDecision({
      host: host.toLowerCase().slice(0, 255),
      port,
      decision: decision.allowed ? "allowed" : "denied",
      reason: decision.reason,
    });
    if (decision.allowed) return { ok: true, addresses };
    a.spec.onDenied(decision.message);
    return { ok: false, line: decision.message };
  }

  private async onConnect(req: http.IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    const a = this.owner.get(socket);
    const target = parseAuthority(req.url ?? "");
    if (!a || !target) return writeFramed(socket, 400, "kiln egress: CONNECT needs host:port", {}, true);
    const verdict = await this.admit(a, target.host, target.port);
    if (!verdict.ok)
      return writeFramed(
        socket,
        verdict.line.startsWith("kiln egress denied") ? 403 : 502,
        verdict.line,
        { "X-Kiln-Egress": verdict.line },
        true,
      );
    let upstream: net.Socket;
    try {
      upstream = await connectFirst(verdict.addresses, target.port, this.opts.connectTimeoutMs ?? 10_000);
    } catch (err) {
      return writeFramed(
        socket,
        502,
        `kiln egress: ${target.host}:${target.port} unreachable (${errorMessage(err)})`,
        {},
        true,
      );
    }
    if (socket.destroyed) return void upstream.destroy();
    socket.write("HTTP/1.1 200 Connection Established\r\n\r\n");
    if (head.length > 0) upstream.write(head);
    socket.pipe(upstream).pipe(socket);
    upstream.on("error", () => socket.destroy());
    socket.once("error", () => upstream.destroy());
    socket.once("close", () => upstream.destroy());
    upstream.once("close", () => socket.destroy());
  }

  private async onRequest(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const a = this.owner.get(req.socket);
    let url: URL | null;
    try {
      url = /^http:\/\//i.test(req.url ?? "") ? new URL(req.url ?? "") : null;
    } catch {
      url = null;
    }
    // Addressed to the proxy itself: origin-form (NO_PROXY names the proxy's host), or absolute-form
    // to the proxy's own address from a client that ignores NO_PROXY (busybox wget in a guest). It
    // serves only the attempt's ID token endpoint; nothing behind it is reachable this way.
    const toSelf = (req.url ?? "").startsWith("/") || (url !== null && SANDBOX_PROXY_AUTHORITIES.has(url.host));
    if (a?.spec.idTokens && toSelf) return a.spec.idTokens.handle(req, res);
    if (!a || !url)
      return writeFramed(
        res,
        400,
        "kiln egress: send absolute http:// URLs (use this address as HTTP_PROXY) or CONNECT for TLS",
        {},
      );
    const port = url.port ? Number(url.port) : 80;
    const host = url.hostname;
    const verdict = await this.admit(a, host, port);
    if (!verdict.ok)
      return writeFramed(res, verdict.line.startsWith("kiln egress denied") ? 403 : 502, verdict.line, {
        "X-Kiln-Egress": verdict.line,
      });
    let upstream: net.Socket;
    try {
      upstream = await connectFirst(verdict.addresses, port, this.opts.connectTimeoutMs ?? 10_000);
    } catch (err) {
      return writeFramed(res, 502, `kiln egress: ${url.host} unreachable (${errorMessage(err)})`, {});
    }
    relayHttp(req, res, {
      socket: upstream,
      path: `${url.pathname}${url.search}`,
      hostHeader: url.host,
      timeoutMs: this.opts.connectTimeoutMs ?? 10_000,
    });
  }
}

/** Tries the admitted addresses in order (a name's ::1 may not be where its server listens). */
async function connectFirst(addresses: string[], port: number, timeoutMs: number): Promise<net.Socket> {
  let last: unknown = new Error("no address");
  for (const host of addresses) {
    try {
      return await new Promise<net.Socket>((resolve, reject) => {
        const s = net.connect({ host, port, timeout: timeoutMs });
        s.once("timeout", () => s.destroy(new Error("connect timed out")));
        s.once("error", reject);
        s.once("connect", () => {
          s.setTimeout(0);
          s.removeListener("error", reject);
          resolve(s);
        });
      });
    } catch (err) {
      last = err;
    }
  }
  throw last;
}

/** "host:port" or "[v6]:port" from a CONNECT request line. */
function parseAuthority(authority: string): { host: string; port: number } | null {
  const m = /^(\[[0-9a-fA-F:.]+\]|[^:[\]\s]+):(\d{1,5})$/.exec(authority);
  if (!m || !m[1] || !m[2]) return null;
  return { host: m[1], port: Number(m[2]) };
}
