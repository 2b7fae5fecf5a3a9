// Test tools for the live log stream (issue 4): a loopback TCP proxy that cuts SSE connections
// after a given number of events, and a real EventSource client that collects a job's log.
import net from "node:net";
import { EventSource } from "eventsource";

export interface ProxiedConnection {
  /** Last-Event-ID the client sent when it opened this connection. */
  lastEventId: string | null;
  status: number | null;
  /** ids of the complete events forwarded on this connection, in order. */
  ids: string[];
  cut: boolean;
}

/**
 * Forwards HTTP to `target`, decoding chunked SSE responses so it can count complete events, and
 * cuts connection i (both sockets, mid-chunk) right after its cuts[i]-th event with an id, plus a
 * few bytes of the next one, so the client also sees a torn event it must discard.
 */
export class SseCuttingProxy {
  readonly connections: ProxiedConnection[] = [];
  private server: net.Server | null = null;

  constructor(
    private readonly target: URL,
    private readonly cuts: number[],
  ) {}

  async start(): Promise<string> {
    this.server = net.createServer((client) => this.handle(client));
    await new Promise<void>((resolve) => this.server?.listen(0, "127.0.0.1", resolve));
    const { port } = this.server.address() as net.AddressInfo;
    return `http://127.0.0.1:${port}`;
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  private handle(client: net.Socket): void {
    const index = this.connections.length;
    const conn: ProxiedConnection = { lastEventId: null, status: null, ids: [], cut: false };
    this.connections.push(conn);
    const cutAfter = this.cuts[index];
    const upstream = net.connect(Number(this.target.port), this.target.hostname);
    // Only the first request's head is inspected: every cut connection is a fresh socket.
    let head = "";
    client.on("data", (d: Buffer) => {
      if (!head.includes("\r\n\r\n")) {
        head += d.toString("latin1");
        const m = /^last-event-id:[ \t]*(.*?)\r$/im.exec(head.split("\r\n\r\n")[0] ?? "");
        if (m) conn.lastEventId = m[1] ?? null;
      }
      upstream.write(d);
    });
    const decoder = new ChunkedSseDecoder((id) => {
      conn.ids.push(id);
      return cutAfter !== undefined && conn.ids.length === cutAfter;
    });
    upstream.on("data", (d: Buffer) => {
      if (conn.cut) return;
      const cutAt = decoder.feed(d, (status) => (conn.status = status));
      if (cutAt === null) {
        client.write(d);
        return;
      }
      conn.cut = true;
      client.write(d.subarray(0, Math.min(d.length, cutAt + 6)), () => {
        client.destroy();
        upstream.destroy();
      });
    });
    const close = () => {
      client.destroy();
      upstream.destroy();
    };
    upstream.on("end", () => client.end());
    client.on("end", () => upstream.end());
    upstream.on("error", close);
    client.on("error", close);
  }
}

/** Incremental HTTP/1.1 response parser: head, then chunked body, then SSE blocks. */
class ChunkedSseDecoder {
  private state: "head" | "size" | "data" | "data-crlf" | "raw" = "head";
  private head = "";
  private sizeLine = "";
  private remaining = 0;
  private crlf = 0;
  private block = "";
  private line = "";

  constructor(private readonly onEvent: (id: string) => boolean) {}

  /** Returns the index in `d` just after the byte that completed the cut event, or null. */
  feed(d: Buffer, onStatus: (s: number) => void): number | null {
    for (let i = 0; i < d.length; i++) {
      const byte = d[i] ?? 0;
      switch (this.state) {
        case "head":
          this.head += String.fromCharCode(byte);
          if (this.head.endsWith("\r\n\r\n")) {
            onStatus(Number(/^HTTP\/1\.1 (\d+)/.exec(this.head)?.[1] ?? 0));
            this.state = /transfer-encoding:\s*chunked/i.test(this.head) ? "size" : "raw";
          }
          break;
        case "size":
          if (byte === 0x0a) {
            this.remaining = Number.parseInt(this.sizeLine.trim(), 16);
            this.sizeLine = "";
            this.state = this.remaining > 0 ? "data" : "raw";
          } else this.sizeLine += String.fromCharCode(byte);
          break;
        case "data":
          this.remaining--;
          if (this.remaining === 0) {
            this.state = "data-crlf";
            this.crlf = 0;
          }
          if (this.sse(byte)) return i + 1;
          break;
        case "data-crlf":
          if (++this.crlf === 2) this.state = "size";
          break;
        case "raw":
          break;
      }
    }
    return null;
  }

  private sse(byte: number): boolean {
    if (byte !== 0x0a) {
      this.line += String.fromCharCode(byte);
      return false;
    }
    if (this.line !== "") {
      this.block += `${this.line}\n`;
      this.line = "";
      return false;
    }
    const id = /^id: (.*)$/m.exec(this.block)?.[1];
    this.block = "";
    return id !== undefined && this.onEvent(id);
  }
}

export interface CollectedLog {
  stdout: Buffer;
  stderr: Buffer;
  ids: string[];
  offsets: { stdout: number[]; stderr: number[] };
  terminal: { event: string; id: string; data: Record<string, unknown> } | null;
  notices: string[];
  /** Every message event's lastEventId seen by the client, in order. */
  attemptEvents: number;
}

/** Follows a job's log with a real EventSource until the server says 204 (or the timeout). */
export function collectLog(
  url: string,
  token: string,
  timeoutMs = 60_000,
  headers: Record<string, string> = {},
): { done: Promise<CollectedLog>; es: EventSource } {
  const parts = { stdout: [] as Buffer[], stderr: [] as Buffer[] };
  const out: CollectedLog = {
    stdout: Buffer.alloc(0),
    stderr: Buffer.alloc(0),
    ids: [],
    offsets: { stdout: [], stderr: [] },
    terminal: null,
    notices: [],
    attemptEvents: 0,
  };
  const es = new EventSource(url, {
    fetch: (input, init) =>
      fetch(input, {
        ...init,
        headers: { ...(init?.headers as Record<string, string>), ...headers, authorization: `Bearer ${token}` },
      }),
  });
  es.addEventListener("message", (e) => {
    const m = JSON.parse(e.data) as { stream: "stdout" | "stderr"; offset: number; data: string };
    out.ids.push(e.lastEventId);
    out.offsets[m.stream].push(m.offset);
    parts[m.stream].push(Buffer.from(m.data, "base64"));
  });
  for (const name of ["log.sealed", "log.truncated", "log.gapped"]) {
    es.addEventListener(name, (e) => {
      out.terminal = { event: name, id: e.lastEventId, data: JSON.parse(e.data) as Record<string, unknown> };
    });
  }
  es.addEventListener("log.cursor_invalid", (e) => out.notices.push(e.data));
  es.addEventListener("log.attempt", () => out.attemptEvents++);
  const done = new Promise<CollectedLog>((resolve, reject) => {
    const timer = setTimeout(() => {
      es.close();
      reject(
        new Error(
          `log stream did not finish in ${timeoutMs} ms (${out.ids.length} events, last ${out.ids[out.ids.length - 1]})`,
        ),
      );
    }, timeoutMs);
    es.addEventListener("error", () => {
      if (es.readyState !== EventSource.CLOSED) return; // reconnecting
      clearTimeout(timer);
      out.stdout = Buffer.concat(parts.stdout);
      out.stderr = Buffer.concat(parts.stderr);
      resolve(out);
    });
  });
  return { done, es };
}
