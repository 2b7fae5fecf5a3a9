// A follower's inbox of live messages: bounded, so a slow SSE client can never make the web
// process buffer without limit. On overflow the backlog is dropped and the follower re-reads the
// durable store instead (it knows its exact position).
import type { LiveLogMessage } from "./log-fanout.ts";

export type QueueItem = LiveLogMessage | "overflow" | "timeout";

export class LiveQueue {
  private items: LiveLogMessage[] = [];
  private bytes = 0;
  private overflowed = false;
  private wake: (() => void) | null = null;

  constructor(private readonly maxBytes = 8 * 1024 * 1024) {}

  push(msg: LiveLogMessage): void {
    if (this.overflowed) return;
    const size = msg.kind === "chunks" ? msg.chunks.reduce((n, c) => n + c.data.length, 0) : 0;
    if (this.bytes + size > this.maxBytes) {
      this.items = [];
      this.bytes = 0;
      this.overflowed = true;
    } else {
      this.items.push(msg);
      this.bytes += size;
    }
    this.wake?.();
  }

  /** The next message, "overflow" once after drops, or "timeout" after `ms` (or on abort). */
  async next(ms: number, signal: AbortSignal): Promise<QueueItem> {
    const ready = this.take();
    if (ready) return ready;
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener("abort", done);
        this.wake = null;
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal.addEventListener("abort", done, { once: true });
      this.wake = done;
    });
    return this.take() ?? "timeout";
  }

  private take(): QueueItem | null {
    if (this.overflowed) {
      this.overflowed = false;
      return "overflow";
    }
    const msg = this.items.shift();
    if (!msg) return null;
    if (msg.kind === "chunks") this.bytes -= msg.chunks.reduce((n, c) => n + c.data.length, 0);
    return msg;
  }
}
