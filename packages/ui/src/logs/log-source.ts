// Connects the viewer to GET /v1/jobs/{id}/logs/events (SSE). Contract (owned by the log API,
// docs/adr/0006-logs.md):
//   data events:  id: <epoch>:<seq>  data: {"stream":"stdout"|"stderr","offset":n,"data":"<base64>"}
//   log.attempt {epoch}            an attempt's output starts (offsets restart at 0)
//   log.sealed | log.truncated | log.gapped {epoch, bytes, dropped_bytes}, id <epoch>:end
//                                  that attempt's log is complete; the server then closes, and a
//                                  reconnect either streams the next attempt or answers 204 (done)
//   log.cursor_invalid             the resume cursor was not honoured; the attempt is replayed
//   error {code, message, details} the log can no longer be read (LOG.EXPIRED: retention deleted
//                                  it; SHRED.KEY_DESTROYED: its key was destroyed); the server
//                                  closes, and a reconnect answers 410 with the same code
//   comments                       keep-alives
// A dropped connection resumes with Last-Event-ID after a backoff; the model skips any bytes a
// resume replays, by offset.
import { SseParser, type SseEvent } from "./sse-parser.ts";
import type { LogStream } from "./log-lines.ts";

type LogTerminal = "sealed" | "truncated" | "gapped";
/** How the whole log ended: the last attempt's terminal, or "empty" when no attempt ever ran. */
type LogEnd = LogTerminal | "empty";

export type SourceState =
  | { kind: "connecting" }
  | { kind: "live" }
  | { kind: "reconnecting"; attempt: number; inMs: number }
  | { kind: "ended"; how: LogEnd }
  /** Deleted for good (ADR 0036/0037): retention evicted it, or its data key was destroyed; `at` when. */
  | { kind: "gone"; why: "expired" | "shredded"; at: string | null; message: string }
  | { kind: "error"; status: number | null; message: string };

export interface LogSourceHandlers {
  chunk(stream: LogStream, offset: number, data: Uint8Array): void;
  /** An attempt's output begins (epoch 2+ is a retry on another host). */
  attempt(epoch: number): void;
  /** One attempt's log ended. */
  terminal(how: LogTerminal, detail: Record<string, unknown>): void;
  /** Everything shown so far is about to be sent again from the start: clear it. */
  reset(): void;
  state(s: SourceState): void;
}

const TERMINAL: Record<string, LogTerminal> = {
  "log.sealed": "sealed",
  "log.truncated": "truncated",
  "log.gapped": "gapped",
};
const MAX_BACKOFF_MS = 15_000;

/** Starts streaming; returns a function that stops it. */
export function openLogSource(url: string, h: LogSourceHandlers): () => void {
  const abort = new AbortController();
  let cursor: string | null = null;
  let last: LogTerminal | null = null;
  let justEnded = false;
  let gone: SourceState | null = null;

  const onEvent = (e: SseEvent) => {
    cursor = e.id ?? cursor;
    const terminal = TERMINAL[e.event];
    if (terminal) {
      last = terminal;
      justEnded = true;
      h.terminal(terminal, parseObject(e.data));
      return;
    }
    if (e.event === "log.attempt") {
      const epoch = parseObject(e.data).epoch;
      if (typeof epoch === "number") h.attempt(epoch);
      return;
    }
    if (e.event === "log.cursor_invalid") return h.reset();
    if (e.event === "error") {
      gone = goneState(parseObject(e.data));
      return;
    }
    if (e.event !== "message") return; // log.error and unknown events: the reconnect covers them
    const msg = parseObject(e.data);
    const stream = msg.stream === "stderr" ? "stderr" : msg.stream === "stdout" ? "stdout" : null;
    if (!stream || typeof msg.offset !== "number" || typeof msg.data !== "string") return;
    h.chunk(stream, msg.offset, decodeBase64(msg.data));
  };

  const run = async () => {
    h.state({ kind: "connecting" });
    let failures = 0;
    let retryMs: number | null = null;
    while (!abort.signal.aborted) {
      const parser = new SseParser(onEvent);
      let status: number | null = null;
      try {
        const res = await fetch(url, {
          headers: { accept: "text/event-stream", ...(cursor ? { "last-event-id": cursor } : {}) },
          credentials: "same-origin",
          cache: "no-store",
          signal: abort.signal,
        });
        status = res.status;
        // 204: nothing more will ever come (every attempt's log ended, or none ever ran).
        if (res.status === 204) {
          h.state({ kind: "ended", how: last ?? "empty" });
          return;
        }
        // 410: the log was deleted (retention, or its key destroyed); retrying cannot bring it back.
        if (res.status === 410) {
          h.state(goneState(await errorBody(res)));
          return;
        }
        if (!res.ok || !res.body) {
          // Auth and not-found answers will not change by retrying; server errors might.
          if (res.status === 401 || res.status === 403 || res.status === 404) {
            h.state({ kind: "error", status: res.status, message: await errorMessage(res) });
            return;
          }
          throw new Error(`log stream answered ${res.status}`);
        }
        h.state({ kind: "live" });
        failures = 0;
        const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
        let sliceStart = performance.now();
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          parser.feed(value);
          // A finished log arrives as fast as the network allows and reads resolve as microtasks:
          // hand the main thread back every few milliseconds so the page keeps painting and
          // scrolling while a large log loads.
          if (performance.now() - sliceStart > 12) {
            await yieldToBrowser();
            sliceStart = performance.now();
          }
        }
      } catch (e) {
        if (abort.signal.aborted) return;
        failures++;
        if (failures > 8) {
          h.state({ kind: "error", status, message: e instanceof Error ? e.message : String(e) });
          return;
        }
      }
      retryMs = parser.retryMs ?? retryMs;
      if (abort.signal.aborted) return;
      if (gone) {
        // It died while streaming: what was shown stays, marked as all there will ever be.
        h.state(gone);
        return;
      }
      if (justEnded) {
        // The server closes on purpose after an attempt's terminal event: ask again at once, for
        // the next attempt's output or for the 204 that says the log is complete.
        justEnded = false;
        continue;
      }
      const inMs = Math.min(MAX_BACKOFF_MS, Math.max(retryMs ?? 0, 500 * 2 ** failures));
      h.state({ kind: "reconnecting", attempt: failures + 1, inMs });
      await sleep(inMs, abort.signal);
    }
  };
  void run();
  return () => abort.abort();
}

function parseObject(s: string): Record<string, unknown> {
  try {
    const v: unknown = JSON.parse(s);
    return v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/** The API's error body ({error: {code, message, details}}), or {} when it is not one. */
async function errorBody(res: Response): Promise<Record<string, unknown>> {
  try {
    const body = (await res.json()) as { error?: unknown };
    return body.error && typeof body.error === "object" ? (body.error as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/** A refusal {code, message, details} as the viewer's state: which deletion, and when. */
function goneState(err: Record<string, unknown>): SourceState {
  const details = (err.details ?? {}) as Record<string, unknown>;
  const message = typeof err.message === "string" ? err.message : "this log can no longer be read";
  if (err.code !== "LOG.EXPIRED" && err.code !== "SHRED.KEY_DESTROYED") return { kind: "error", status: 410, message };
  const at = err.code === "LOG.EXPIRED" ? details.expired_at : details.key_due_at;
  return {
    kind: "gone",
    why: err.code === "LOG.EXPIRED" ? "expired" : "shredded",
    at: typeof at === "string" ? at : null,
    message,
  };
}

async function errorMessage(res: Response): Promise<string> {
  // The API's own wording is for API clients ("missing bearer token"); a person gets these.
  if (res.status === 401) return "the log service did not accept this session; sign in again";
  if (res.status === 403) return "you do not have access to this log";
  try {
    const body = (await res.json()) as { error?: { message?: string } };
    if (body.error?.message) return body.error.message;
  } catch {
    // not JSON: fall through to the status text
  }
  return "this job has no log (yet)";
}

const fromBase64 = (Uint8Array as unknown as { fromBase64?: (s: string) => Uint8Array }).fromBase64;

function decodeBase64(b64: string): Uint8Array {
  if (fromBase64) return fromBase64(b64);
  const bin = atob(b64);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

function yieldToBrowser(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 0));
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener(
      "abort",
      () => {
        clearTimeout(t);
        resolve();
      },
      { once: true },
    );
  });
}
