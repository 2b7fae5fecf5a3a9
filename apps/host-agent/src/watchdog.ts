// Local lease watchdog. The control plane re-dispatches an attempt whose lease lapsed, so once our
// last successful heartbeat is older than the lease TTL another agent may already be running the
// same job: we must stop ours on our own, without waiting to hear that from the server (we may be
// partitioned from it). Measured on the monotonic clock.
import { monotonicNow, type MonotonicClock } from "./timing.ts";

export interface WatchdogOptions {
  ttlMs: number;
  onExpire: () => void;
  now?: MonotonicClock;
  /** When the lease was last known to be granted; defaults to construction time. */
  aliveSince?: number;
  /** How often start()'s timer checks; defaults to ttl/10 within [50 ms, 1 s]. */
  checkEveryMs?: number;
}

export class Watchdog {
  private readonly now: MonotonicClock;
  private lastAliveAt: number;
  private timer: NodeJS.Timeout | null = null;
  private state: "armed" | "expired" | "stopped" = "armed";

  constructor(private readonly opts: WatchdogOptions) {
    this.now = opts.now ?? monotonicNow;
    // The claim response itself granted the lease: the clock starts there, not at a first heartbeat.
    this.lastAliveAt = opts.aliveSince ?? this.now();
  }

  start(): void {
    if (this.timer || this.state !== "armed") return;
    const every = this.opts.checkEveryMs ?? Math.min(1_000, Math.max(50, this.opts.ttlMs / 10));
    this.timer = setInterval(() => this.check(), every);
  }

  /**
   * A heartbeat succeeded. Pass the time the request was *sent*: the server renewed the lease
   * somewhere between sending and our reading the answer, so the send time is the safe bound.
   */
  feed(at: number = this.now()): void {
    if (this.state === "armed" && at > this.lastAliveAt) this.lastAliveAt = at;
  }

  /** Milliseconds until expiry (negative once past it). */
  remainingMs(): number {
    return this.lastAliveAt + this.opts.ttlMs - this.now();
  }

  /** Fires onExpire exactly once when the lease is past due; returns whether it has expired. */
  check(): boolean {
    if (this.state === "armed" && this.remainingMs() <= 0) {
      this.state = "expired";
      this.clearTimer();
      this.opts.onExpire();
    }
    return this.state === "expired";
  }

  stop(): void {
    if (this.state === "armed") this.state = "stopped";
    this.clearTimer();
  }

  private clearTimer(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }
}
