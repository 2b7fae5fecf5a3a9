// Step output until the log pipeline exists: both pipes are drained as data arrives and written to
// the agent's stdout line by line as `[job <name>#<epoch> stdout] ...`, at most CAP bytes per
// attempt. Past the cap the bytes are counted and dropped but still read, so the step never
// blocks on a full pipe and the agent's memory stays bounded.
import type { LineWriter } from "../logger.ts";

const STEP_OUTPUT_CAP_BYTES = 1024 * 1024;
const NEWLINE = 0x0a;

type StreamName = "stdout" | "stderr";

export class StepOutputSink {
  private usedBytes = 0;
  private dropped = 0;
  private truncationNoted = false;
  private readonly partial: Record<StreamName, Buffer[]> = { stdout: [], stderr: [] };

  /** Listeners to hand to Sandbox.runStep. */
  readonly stdout = (chunk: Buffer): void => this.accept("stdout", chunk);
  readonly stderr = (chunk: Buffer): void => this.accept("stderr", chunk);

  constructor(
    private readonly label: string,
    private readonly write: LineWriter,
    private readonly capBytes = STEP_OUTPUT_CAP_BYTES,
  ) {}

  get droppedBytes(): number {
    return this.dropped;
  }

  /** Emits unterminated trailing lines (call at the end of each step). */
  flush(): void {
    for (const stream of ["stdout", "stderr"] as const) {
      const rest = Buffer.concat(this.partial[stream]);
      this.partial[stream] = [];
      if (rest.length > 0) this.emit(stream, rest);
    }
  }

  private accept(stream: StreamName, chunk: Buffer): void {
    const allowed = Math.min(chunk.length, this.capBytes - this.usedBytes);
    this.usedBytes += allowed;
    this.dropped += chunk.length - allowed;
    if (allowed > 0) this.split(stream, allowed === chunk.length ? chunk : chunk.subarray(0, allowed));
    if (allowed < chunk.length && !this.truncationNoted) {
      this.truncationNoted = true;
      this.flush();
      this.write(`[job ${this.label}] output reached ${this.capBytes} bytes for this attempt; further output is dropped`);
    }
  }

  private split(stream: StreamName, chunk: Buffer): void {
    let data = chunk;
    let newline = data.indexOf(NEWLINE);
    while (newline !== -1) {
      const line = Buffer.concat([...this.partial[stream], data.subarray(0, newline)]);
      this.partial[stream] = [];
      this.emit(stream, line);
      data = data.subarray(newline + 1);
      newline = data.indexOf(NEWLINE);
    }
    if (data.length > 0) this.partial[stream].push(Buffer.from(data));
  }

  private emit(stream: StreamName, line: Buffer): void {
    this.write(`[job ${this.label} ${stream}] ${line.toString("utf8").replace(/\r$/, "")}`);
  }
}
