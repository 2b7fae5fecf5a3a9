// Turns the two pipes of a step into chunks (seed 000 section 13): per-attempt size limit, secret
// masking, and a cut at KILN_LOG_FLUSH_BYTES or when the flush timer fires. Synchronous and
// allocation-light: it runs inside the pipes' 'data' handlers, which must never block (a full
// pipe would stall the build). Past the limit bytes are still read, counted and discarded.
import { createHash } from "node:crypto";
import { SecretMasker, type LogStream } from "@kiln/domain";

export interface CapturedChunk {
  seq: number;
  stream: LogStream;
  offset: number;
  length: number;
  sha256: string;
  data: Buffer;
}

export interface CaptureLimits {
  /** Bytes kept per attempt, both streams together; the rest is dropped and counted. */
  maxBytes: number;
  /** Cut a chunk once this many bytes are buffered for a stream. */
  flushBytes: number;
}

export class LogCapture {
  private readonly open: Record<LogStream, { parts: Buffer[]; size: number }> = {
    stdout: { parts: [], size: 0 },
    stderr: { parts: [], size: 0 },
  };
  private readonly maskers: Record<LogStream, SecretMasker>;
  private readonly offsets: Record<LogStream, number> = { stdout: 0, stderr: 0 };
  readonly dropped: Record<LogStream, number> = { stdout: 0, stderr: 0 };
  private accepted = 0;
  private seq = 0;

  constructor(
    private readonly limits: CaptureLimits,
    secrets: readonly string[],
    private readonly onChunk: (c: CapturedChunk) => void,
  ) {
    this.maskers = { stdout: new SecretMasker(secrets), stderr: new SecretMasker(secrets) };
  }

  /** Masks these values too from now on, including in bytes a masker still holds back. */
  addSecrets(values: readonly string[]): void {
    if (values.length === 0) return;
    for (const stream of ["stdout", "stderr"] as const) this.maskers[stream] = this.maskers[stream].withMore(values);
  }

  /** Chunks cut so far (the next sequence number). */
  get nextSeq(): number {
    return this.seq;
  }

  /** Bytes cut into chunks so far, per stream (the final offsets once the attempt ends). */
  get bytes(): Record<LogStream, number> {
    return { ...this.offsets };
  }

  get hasBuffered(): boolean {
    return this.open.stdout.size > 0 || this.open.stderr.size > 0;
  }

  write(stream: LogStream, data: Buffer): void {
    const allowed = Math.max(0, Math.min(data.length, this.limits.maxBytes - this.accepted));
    this.accepted += allowed;
    this.dropped[stream] += data.length - allowed;
    if (allowed === 0) return;
    const masked = this.maskers[stream].push(allowed === data.length ? data : data.subarray(0, allowed));
    this.buffer(stream, masked);
  }

  /** The flush timer: cut whatever is buffered (bytes a masker holds back stay held). */
  flush(): void {
    this.cut("stdout");
    this.cut("stderr");
  }

  /** A step ended: its pipes are closed, so held-back bytes can no longer start a secret. */
  endStep(): void {
    for (const stream of ["stdout", "stderr"] as const) this.buffer(stream, this.maskers[stream].end());
    this.flush();
  }

  private buffer(stream: LogStream, bytes: Uint8Array): void {
    if (bytes.length === 0) return;
    const o = this.open[stream];
    o.parts.push(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
    o.size += bytes.length;
    if (o.size >= this.limits.flushBytes) this.cut(stream);
  }

  private cut(stream: LogStream): void {
    const o = this.open[stream];
    if (o.size === 0) return;
    const all = o.parts.length === 1 && o.parts[0] ? o.parts[0] : Buffer.concat(o.parts, o.size);
    o.parts = [];
    o.size = 0;
    for (let at = 0; at < all.length; at += this.limits.flushBytes) {
      // Copy: the chunk outlives the pipe's buffer and is kept until acknowledged.
      const data = Buffer.from(all.subarray(at, Math.min(all.length, at + this.limits.flushBytes)));
      const chunk = {
        seq: this.seq++,
        stream,
        offset: this.offsets[stream],
        length: data.length,
        sha256: createHash("sha256").update(data).digest("hex"),
        data,
      };
      this.offsets[stream] += data.length;
      this.onChunk(chunk);
    }
  }
}
