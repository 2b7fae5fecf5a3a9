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
import { errorMessage, type Logger } from "../logger.ts";
import { relayHttp, writeFramed } from "./http-relay.ts";
import { listen, type ListenerHandle } from "./egress-listener.ts";
import type { EgressListenerAddress } from "./egress-registry.ts";

type EgressPolicy = NonNullable<JobTicket["egress"]>;

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
    this.server.on("clientError", (_err, socket) => writeFramed(socket, 400, "kiln egress: malformed proxy request", {}, true));
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
    return decideEgress({ host, port, trustClass: a.spec.trustClass, allowList: policy?.allowList ?? [], platformHosts: policy?.platformHosts ?? [] });
  }

  /** Decides, resolves and re-checks the address; reports and, on denial, announces. */
  private async admit(a: Attempt, host: string, port: number): Promise<{ ok: true; address: string } | { ok: false; line: string }> {
    let decision = this.judge(a, host, port);
    let address = "";
    if (decision.allowed) {
      try {
        address = net.isIP(host.replace(/^\[|\]$/g, "")) ? host.replace(/^\[|\]$/g, "") : (await lookup(host)).address;
        decision = decideResolvedAddress(decision, { host, port, address, trustClass: a.spec.trustClass, allowInternal: this.opts.allowInternalAddresses });
      } catch (err) {
        a.spec.onDecision({ host: host.toLowerCase(), port, decision: "denied", reason: "dns_failed" });
        return { ok: false, line: `kiln egress: ${host} could not be resolved (${errorMessage(err).slice(0, 100)})` };
      }
    }
    const shownHost = host.toLowerCase().slice(0, 255);
    a.spec.onDecision({ host: shownHost, port, decision: decision.allowed ? "allowed" : "denied", reason: decision.reason });
    if (decision.allowed) return { ok: true, address };
    a.spec.onDenied(decision.message);
    return { ok: false, line: decision.message };
  }

  private async onConnect(req: http.IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    const a = this.owner.get(socket);
    const target = parseAuthority(req.url ?? "");
    if (!a || !target) return writeFramed(socket, 400, "kiln egress: CONNECT needs host:port", {}, true);
    const verdict = await this.admit(a, target.host, target.port);
    if (!verdict.ok) return writeFramed(socket, verdict.line.startsWith("kiln egress denied") ? 403 : 502, verdict.line, { "X-Kiln-Egress": verdict.line }, true);
    const upstream = net.connect({ host: verdict.address, port: target.port, timeout: this.opts.connectTimeoutMs ?? 10_000 });
    upstream.once("timeout", () => upstream.destroy(new Error("connect timed out")));
    upstream.once("error", (err) => {
      if (upstream.connecting || upstream.bytesRead === 0) writeFramed(socket, 502, `kiln egress: ${target.host}:${target.port} unreachable (${errorMessage(err)})`, {}, true);
      else socket.destroy();
    });
    upstream.once("connect", () => {
      upstream.setTimeout(0);
      socket.write("HTTP/1.1 200 Connection Established\r\n\r\n");
      if (head.length > 0) upstream.write(head);
      socket.pipe(upstream).pipe(socket);
      socket.once("error", () => upstream.destroy());
      socket.once("close", () => upstream.destroy());
      upstream.once("close", () => socket.destroy());
    });
  }

  private async onRequest(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const a = this.owner.get(req.socket);
    let url: URL | null = null;
    try {
      url = /^http:\/\//i.test(req.url ?? "") ? new URL(req.url ?? "") : null;
    } catch {
      url = null;
    }
    if (!a || !url) return writeFramed(res, 400, "kiln egress: send absolute http:// URLs (use this address as HTTP_PROXY) or CONNECT for TLS", {});
    const port = url.port ? Number(url.port) : 80;
    const host = url.hostname;
    const verdict = await this.admit(a, host, port);
    if (!verdict.ok) return writeFramed(res, verdict.line.startsWith("kiln egress denied") ? 403 : 502, verdict.line, { "X-Kiln-Egress": verdict.line });
    relayHttp(req, res, { address: verdict.address, port, path: `${url.pathname}${url.search}`, hostHeader: url.host, timeoutMs: this.opts.connectTimeoutMs ?? 10_000 });
  }
}

/** "host:port" or "[v6]:port" from a CONNECT request line. */
function parseAuthority(authority: string): { host: string; port: number } | null {
  const m = /^(\[[0-9a-fA-F:.]+\]|[^:[\]\s]+):(\d{1,5})$/.exec(authority);
  if (!m || !m[1] || !m[2]) return null;
  return { host: m[1], port: Number(m[2]) };
}
