// Keeps one attempt's lease alive: POST .../heartbeat every ticket.heartbeatMs with the job token.
// Never two requests in flight; a pending phase report is sent at once and repeated until one
// heartbeat carrying it succeeds.
import { describeFailure, type ControlClient, type HeartbeatRequest, type JobTicket } from "./control-client.ts";
import type { Logger } from "@kiln/logger";
import { monotonicNow, type MonotonicClock } from "./timing.ts";

type Phase = NonNullable<HeartbeatRequest["phase"]>;

export interface HeartbeatEvents {
  /** A heartbeat succeeded; `sentAt` is when it was sent (monotonic). */
  onAlive(sentAt: number): void;
  /** The control plane asked for this attempt to be cancelled. */
  onCancelRequested(): void;
  /** 409: this attempt is no longer ours (stale epoch or expired lease). */
  onFenced(code: string): void;
}

export class HeartbeatLoop {
  private timer: NodeJS.Timeout | null = null;
  private inFlight = false;
  private sendAgainAtOnce = false;
  private stopped = false;
  private pendingPhase: Phase | null = null;
  private readonly intervalMs: number;

  constructor(
    private readonly client: ControlClient,
    private readonly ticket: JobTicket,
    private readonly events: HeartbeatEvents,
    private readonly logger: Logger,
    private readonly now: MonotonicClock = monotonicNow,
  ) {
    this.intervalMs = Math.max(100, ticket.heartbeatMs);
  }

  start(): void {
    this.schedule(this.intervalMs);
  }

  /** Reports a phase (e.g. "first step starting") with an immediate heartbeat. */
  reportPhase(phase: Phase): void {
    this.pendingPhase = phase;
    this.beatNow();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  private beatNow(): void {
    if (this.stopped) return;
    if (this.inFlight) {
      this.sendAgainAtOnce = true;
      return;
    }
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    void this.beat();
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.beat();
    }, delayMs);
  }

  private async beat(): Promise<void> {
    this.inFlight = true;
    const phase = this.pendingPhase;
    const sentAt = this.now();
    const res = await this.client.heartbeat(
      this.ticket.jobId,
      this.ticket.jobToken,
      { epoch: this.ticket.epoch, ...(phase ? { phase } : {}) },
      { timeoutMs: Math.max(2_000, this.intervalMs) },
    );
    this.inFlight = false;
    if (this.stopped) return;
    if (res.ok) {
      if (phase && this.pendingPhase === phase) this.pendingPhase = null;
      this.events.onAlive(sentAt);
      if (res.data.cancel_requested) this.events.onCancelRequested();
    } else if (res.kind === "http" && res.status === 409) {
      this.stop();
      this.events.onFenced(res.code);
      return;
    } else {
      // Keep trying: the watchdog, not a single failure, decides when the lease is lost.
      this.logger.warn("heartbeat failed", { error: describeFailure(res) });
    }
    const again = this.sendAgainAtOnce;
    this.sendAgainAtOnce = false;
    this.schedule(again ? 0 : this.intervalMs);
  }
}
