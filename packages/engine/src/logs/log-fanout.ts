// Live fan-out through Redis pub/sub: ingest publishes each committed batch on the job's channel
// after commit; every web process holds one subscriber connection and hands messages to its SSE
// followers. Redis is a latency path only: followers detect holes by sequence number and re-read
// the durable store, so a lost message costs latency, never bytes.
//
// Messages are binary log frames (the ingest framing: JSON header + raw bytes). Each web process
// base64-encodes a batch once for all its followers; nothing converts megabyte strings to UTF-8
// on the ingest path (building JSON text for Redis measured ~25 ms/MiB there).
import type { Redis } from "ioredis";
import { decodeLogFrame, encodeLogFrame, type LogState, type LogStream } from "@kiln/domain";

export function logChannel(jobId: string): string {
  return `kiln:logs:${jobId}`;
}

/** What followers receive: chunk data already base64 for the SSE `data:` JSON. */
export interface LiveChunk {
  seq: number;
  stream: LogStream;
  offset: number;
  /** base64 */
  data: string;
}

export type LiveLogMessage =
  | { kind: "chunks"; epoch: number; chunks: LiveChunk[] }
  | { kind: "state"; epoch: number; state: LogState };

/** What ingest publishes: the committed chunks' bytes. */
export type PublishedLogMessage =
  | { kind: "chunks"; epoch: number; chunks: { seq: number; stream: LogStream; offset: number; data: Uint8Array }[] }
  | { kind: "state"; epoch: number; state: LogState };

// Publish while connected or still connecting (the offline queue covers the first connect);
// while Redis is away, skip: queued megabytes would only grow, and followers poll the journal anyway.
const PUBLISHABLE = new Set(["ready", "connect", "connecting", "wait"]);

/**
 * Publishes after commit, fire-and-forget; a failure is reported, never retried (followers poll).
 * Most jobs have no viewer: when a PUBLISH reached nobody, that job's chunk batches are skipped for
 * `quietMs` (state changes always go). A viewer arriving meanwhile catches up from the journal on
 * its next poll, so this costs a new viewer at most ~quietMs of latency once, never bytes, and
 * spares Redis every byte of every unwatched log.
 */
export class LogPublisher {
  private readonly unwatchedUntil = new Map<string, number>();

  constructor(
    private readonly redis: Redis,
    private readonly onError: (e: unknown) => void,
    private readonly quietMs = 1_000,
  ) {}

  publish(jobId: string, msg: PublishedLogMessage): void {
    if (!PUBLISHABLE.has(this.redis.status)) return;
    const now = Date.now();
    if (msg.kind === "chunks" && (this.unwatchedUntil.get(jobId) ?? 0) > now) return;
    const frame =
      msg.kind === "state"
        ? encodeLogFrame(msg, [])
        : encodeLogFrame(
            {
              kind: "chunks",
              epoch: msg.epoch,
              chunks: msg.chunks.map((c) => ({
                seq: c.seq,
                stream: c.stream,
                offset: c.offset,
                length: c.data.length,
              })),
            },
            msg.chunks.map((c) => c.data),
          );
    this.redis
      .publish(logChannel(jobId), Buffer.from(frame.buffer, frame.byteOffset, frame.byteLength))
      .then((receivers) => {
        if (receivers > 0) this.unwatchedUntil.delete(jobId);
        else if (msg.kind === "chunks") this.remember(jobId, now + this.quietMs);
      }, this.onError);
  }

  private remember(jobId: string, until: number): void {
    if (this.unwatchedUntil.size > 10_000) {
      const now = Date.now();
      for (const [k, t] of this.unwatchedUntil) if (t <= now) this.unwatchedUntil.delete(k);
    }
    this.unwatchedUntil.set(jobId, until);
  }
}

type Listener = (msg: LiveLogMessage) => void;

/** One subscriber connection per process, reference-counted per job channel. */
export class LogHub {
  private readonly listeners = new Map<string, Set<Listener>>();

  constructor(
    private readonly subscriber: Redis,
    private readonly onError: (e: unknown) => void,
  ) {
    subscriber.on("messageBuffer", (channel: Buffer, message: Buffer) => this.dispatch(channel.toString(), message));
    subscriber.on("error", onError);
  }

  subscribe(jobId: string, listener: Listener): () => void {
    const channel = logChannel(jobId);
    let set = this.listeners.get(channel);
    if (!set) {
      set = new Set();
      this.listeners.set(channel, set);
      this.subscriber.subscribe(channel).catch(this.onError);
    }
    set.add(listener);
    return () => {
      const s = this.listeners.get(channel);
      if (!s) return;
      s.delete(listener);
      if (s.size === 0) {
        this.listeners.delete(channel);
        this.subscriber.unsubscribe(channel).catch(this.onError);
      }
    };
  }

  private dispatch(channel: string, message: Buffer): void {
    const set = this.listeners.get(channel);
    if (!set) return;
    const msg = decodeLiveMessage(message);
    if (!msg) {
      this.onError(new Error(`undecodable live log message on ${channel}`));
      return;
    }
    for (const l of set) l(msg);
  }
}

function decodeLiveMessage(message: Buffer): LiveLogMessage | null {
  const frame = decodeLogFrame(message);
  if (!frame) return null;
  const h = frame.header as { kind?: unknown; epoch?: unknown; state?: unknown; chunks?: unknown };
  if (typeof h.epoch !== "number") return null;
  if (h.kind === "state") return { kind: "state", epoch: h.epoch, state: h.state as LogState };
  if (h.kind !== "chunks" || !Array.isArray(h.chunks)) return null;
  const payload = Buffer.from(frame.payload.buffer, frame.payload.byteOffset, frame.payload.byteLength);
  let at = 0;
  const chunks: LiveChunk[] = [];
  for (const c of h.chunks as { seq: number; stream: LogStream; offset: number; length: number }[]) {
    chunks.push({
      seq: c.seq,
      stream: c.stream,
      offset: c.offset,
      data: payload.toString("base64", at, at + c.length),
    });
    at += c.length;
  }
  return at === payload.length ? { kind: "chunks", epoch: h.epoch, chunks } : null;
}
