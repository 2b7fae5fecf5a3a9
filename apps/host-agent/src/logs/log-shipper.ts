// The host agent's log shipper for one attempt (docs/adr/0006-logs.md): capture (limit, masking,
// chunking) -> disk spool -> one ordered sender that retries every unacknowledged chunk until the
// control plane acknowledges it (after it is durable in PostgreSQL) -> seal. A log that cannot be
// sealed (fenced attempt, drain deadline) is left for the control plane to mark gapped.
import path from "node:path";
import { maskPatternsFor, secretValuesFromEnv, type LogStream } from "@kiln/domain";
import {
  describeFailure,
  isRetriable,
  type ApiResult,
  type LogAppendResponse,
  type LogSealRequest,
  type LogSealResponse,
} from "../control-client.ts";
import { errorMessage, type Logger } from "@kiln/logger";
import { backoffMs, sleep } from "../timing.ts";
import { LogCapture, type CapturedChunk } from "./log-capture.ts";
import { LogSpool } from "./log-spool.ts";
import { TokenBucket } from "./token-bucket.ts";

export interface LogShipperConfig {
  flushMs: number;
  flushBytes: number;
  maxBytes: number;
  rateBytesPerSec: number;
  /** Unacknowledged bytes kept in memory; beyond it chunks are read back from the spool. */
  memoryBytes: number;
  /** Where per-attempt spools live (<dir>/<attemptId>). */
  spoolDir: string;
}

export interface WireChunk {
  identity: Omit<CapturedChunk, "data">;
  data: Buffer;
}

/** The two calls the shipper makes, bound to one attempt's job token. */
export interface LogTransport {
  append(batch: { epoch: number; chunks: WireChunk[] }, signal: AbortSignal): Promise<ApiResult<LogAppendResponse>>;
  seal(body: LogSealRequest, signal: AbortSignal): Promise<ApiResult<LogSealResponse>>;
}

export type LogOutcome = "sealed" | "truncated" | "unsealed";

interface Pending {
  chunk: Omit<CapturedChunk, "data">;
  data: Buffer | null;
  written: Promise<boolean>;
}

const MAX_BATCH_BYTES = 1024 * 1024;
const MAX_BATCH_CHUNKS = 256;
const FENCED = new Set(["ATTEMPT.STALE_EPOCH", "ATTEMPT.LEASE_EXPIRED", "ATTEMPT.NOT_FOUND"]);

export class LogShipper {
  private readonly capture: LogCapture;
  private readonly spool: LogSpool;
  private readonly bucket: TokenBucket;
  private readonly stopSending = new AbortController();
  private readonly pending: Pending[] = [];
  private memoryBytes = 0;
  private timer: NodeJS.Timeout | null = null;
  private wake: (() => void) | null = null;
  private stopReason: string | null = null;
  private spoolFailed = false;
  private readonly sender: Promise<void>;

  /** Listeners for Sandbox.runStep. */
  readonly stdout = (data: Buffer): void => this.accept("stdout", data);
  readonly stderr = (data: Buffer): void => this.accept("stderr", data);

  constructor(
    private readonly cfg: LogShipperConfig,
    private readonly attempt: { attemptId: string; epoch: number; env: Record<string, string> },
    private readonly transport: LogTransport,
    private readonly log: Logger,
  ) {
    this.capture = new LogCapture(
      { maxBytes: cfg.maxBytes, flushBytes: cfg.flushBytes },
      secretValuesFromEnv(attempt.env),
      (c) => this.enqueue(c),
    );
    this.spool = new LogSpool(path.join(cfg.spoolDir, attempt.attemptId));
    this.bucket = new TokenBucket(cfg.rateBytesPerSec, Math.max(cfg.rateBytesPerSec, MAX_BATCH_BYTES));
    this.sender = this.sendLoop();
  }

  /**
   * Delivered secrets (issue 16): each value and its base64, URL-encoded and JSON-escaped forms
   * are masked in every byte captured from now on, before it is spooled or sent.
   */
  maskSecrets(values: readonly string[]): void {
    this.capture.addSecrets(maskPatternsFor(values));
  }

  /** A step ended: release masked-back bytes and cut everything buffered. */
  endStep(): void {
    this.capture.endStep();
  }

  /** Fenced or lease lost: another attempt owns the job; stop at once, keep nothing. */
  abandon(reason: string): void {
    this.stop(reason);
  }

  /**
   * After the last step: ship everything, then seal. Gives up at the deadline (the control plane
   * then marks the log gapped when the attempt ends); never blocks past it.
   */
  async finish(deadlineMs: number): Promise<LogOutcome> {
    this.capture.endStep();
    this.clearTimer();
    const deadline = AbortSignal.any([AbortSignal.timeout(Math.max(0, deadlineMs)), this.stopSending.signal]);
    while (this.pending.length > 0 && !deadline.aborted) await this.drained(deadline);
    let outcome: LogOutcome = "unsealed";
    if (this.pending.length === 0 && this.stopReason === null) outcome = await this.seal(deadline);
    this.stop(outcome === "unsealed" ? (this.stopReason ?? "drain deadline") : "sealed");
    await this.sender;
    await this.spool
      .remove()
      .catch((e: unknown) => this.log.warn("could not remove the log spool", { error: errorMessage(e) }));
    const fields = {
      outcome,
      next_seq: this.capture.nextSeq,
      bytes: this.capture.bytes,
      dropped_bytes: this.capture.dropped,
      unacknowledged_chunks: this.pending.length,
    };
    if (outcome === "unsealed")
      this.log.warn("log not sealed; the control plane will mark it gapped", { ...fields, reason: this.stopReason });
    else this.log.info("log sealed", fields);
    return outcome;
  }

  private accept(stream: LogStream, data: Buffer): void {
    this.capture.write(stream, data);
    if (this.capture.hasBuffered && !this.timer) {
      this.timer = setTimeout(() => {
        this.timer = null;
        this.capture.flush();
      }, this.cfg.flushMs);
    }
  }

  private enqueue(c: CapturedChunk): void {
    if (this.stopReason !== null) return;
    const entry: Pending = {
      chunk: { seq: c.seq, stream: c.stream, offset: c.offset, length: c.length, sha256: c.sha256 },
      data: c.data,
      written: Promise.resolve(false),
    };
    this.memoryBytes += c.length;
    entry.written = this.spool.write(c.stream, c.offset, c.data).then(
      () => {
        // Over the memory budget: keep this chunk only on disk until it is sent.
        if (this.memoryBytes > this.cfg.memoryBytes && entry.data) {
          entry.data = null;
          this.memoryBytes -= c.length;
        }
        return true;
      },
      (e: unknown) => {
        if (!this.spoolFailed)
          this.log.warn("log spool write failed; keeping unacknowledged output in memory", { error: errorMessage(e) });
        this.spoolFailed = true;
        return false;
      },
    );
    this.pending.push(entry);
    this.wake?.();
  }

  private async sendLoop(): Promise<void> {
    const signal = this.stopSending.signal;
    let failures = 0;
    while (!signal.aborted) {
      if (this.pending.length === 0) {
        await new Promise<void>((resolve) => {
          const done = () => {
            this.wake = null;
            signal.removeEventListener("abort", done);
            resolve();
          };
          this.wake = done;
          signal.addEventListener("abort", done, { once: true });
        });
        continue;
      }
      const batch = this.pending.slice(0, MAX_BATCH_CHUNKS);
      let bytes = 0;
      let n = 0;
      while (n < batch.length && (n === 0 || bytes + (batch[n]?.chunk.length ?? 0) <= MAX_BATCH_BYTES))
        bytes += batch[n++]?.chunk.length ?? 0;
      const chunks = await Promise.all(batch.slice(0, n).map((p) => this.wire(p)));
      await this.bucket.take(bytes, signal);
      if (signal.aborted) return;
      const res = await this.transport.append({ epoch: this.attempt.epoch, chunks }, signal);
      if (res.ok) {
        failures = 0;
        this.acknowledge(res.data.next_seq);
        continue;
      }
      if (signal.aborted) return;
      if (res.kind === "http" && FENCED.has(res.code)) return this.stop(`fenced (${res.code})`);
      if (!isRetriable(res)) {
        this.log.error("log chunks refused; shipping stops and the log will be marked gapped", {
          error: describeFailure(res),
        });
        return this.stop(`refused (${res.kind === "http" ? res.code : res.kind})`);
      }
      const delay = backoffMs(failures++, 200, 5_000);
      if (failures === 1 || failures % 10 === 0)
        this.log.warn("log chunks not acknowledged; retrying", {
          error: describeFailure(res),
          retry_in_ms: delay,
          pending_chunks: this.pending.length,
        });
      await sleep(delay, signal);
    }
  }

  private async wire(p: Pending): Promise<WireChunk> {
    let data = p.data;
    if (!data) {
      await p.written;
      data = await this.spool.read(p.chunk.stream, p.chunk.offset, p.chunk.length);
    }
    return { identity: p.chunk, data };
  }

  /** Everything below `nextSeq` is durable on the control plane: drop it here. */
  private acknowledge(nextSeq: number): void {
    while (this.pending[0] && this.pending[0].chunk.seq < nextSeq) {
      const done = this.pending.shift();
      if (done?.data) this.memoryBytes -= done.chunk.length;
    }
    this.onDrained?.();
  }

  private onDrained: (() => void) | null = null;

  private drained(signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        this.onDrained = null;
        signal.removeEventListener("abort", done);
        resolve();
      };
      this.onDrained = done;
      signal.addEventListener("abort", done, { once: true });
    });
  }

  private async seal(deadline: AbortSignal): Promise<LogOutcome> {
    const body = {
      epoch: this.attempt.epoch,
      next_seq: this.capture.nextSeq,
      bytes: this.capture.bytes,
      dropped_bytes: { ...this.capture.dropped },
    };
    for (let i = 0; !deadline.aborted; i++) {
      const res = await this.transport.seal(body, deadline);
      if (res.ok) return res.data.state;
      if (deadline.aborted || !isRetriable(res)) {
        this.log.error("log seal refused", { error: describeFailure(res) });
        this.stopReason = `seal refused (${res.kind === "http" ? res.code : res.kind})`;
        return "unsealed";
      }
      await sleep(backoffMs(i, 200, 5_000), deadline);
    }
    return "unsealed";
  }

  private stop(reason: string): void {
    this.clearTimer();
    this.stopReason ??= reason;
    this.stopSending.abort();
    this.onDrained?.();
  }

  private clearTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }
}
