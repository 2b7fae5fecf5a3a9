// The host end of the guest agent's "ctl" port: newline-delimited ASCII lines. The guest is
// untrusted, so lines are length-capped and anything unexpected is a MICROVM.GUEST_PROTOCOL error.
import type net from "node:net";
import { MicrovmError } from "./microvm-errors.ts";

const MAX_LINE = 4096;
/**
 * Lines the guest may have sent ahead of the host reading them (issue 28: the queue was unbounded,
 * so a guest writing lines nobody asked for grew the agent's memory without limit). The protocol is
 * question and answer, with at most a handful of lines ahead; past this the guest is misbehaving.
 */
export const MAX_QUEUED_LINES = 256;
/** The same bound in bytes (256 lines of MAX_LINE would be 1 MiB). */
const MAX_QUEUED_BYTES = 64 * 1024;

export class CtlChannel {
  private buffer = "";
  private lines: string[] = [];
  private queuedBytes = 0;
  private waiter: { resolve: (l: string) => void; reject: (e: Error) => void } | null = null;
  private failure: Error | null = null;

  constructor(private readonly socket: net.Socket) {
    socket.setEncoding("latin1");
    socket.on("data", (chunk: string) => this.onData(chunk));
    socket.on("error", () => undefined);
    socket.on("close", () => this.fail(new MicrovmError("MICROVM.VM_LOST", "control port closed (VM exited)")));
  }

  send(line: string): void {
    if (this.failure) throw this.failure;
    this.socket.write(`${line}\n`);
  }

  /** The next line from the guest, or a rejection on timeout / VM loss. */
  next(timeoutMs: number, what: string): Promise<string> {
    const queued = this.lines.shift();
    if (queued !== undefined) {
      this.queuedBytes -= queued.length;
      return Promise.resolve(queued);
    }
    if (this.failure) return Promise.reject(this.failure);
    return new Promise((resolve, reject) => {
      const timer =
        timeoutMs === Infinity
          ? null
          : setTimeout(() => {
              this.waiter = null;
              reject(new MicrovmError("MICROVM.GUEST_PROTOCOL", `guest did not answer ${what} within ${timeoutMs} ms`));
            }, timeoutMs);
      this.waiter = {
        resolve: (l) => (timer && clearTimeout(timer), resolve(l)),
        reject: (e) => (timer && clearTimeout(timer), reject(e)),
      };
    });
  }

  /** Reads lines until one starts with `word`; anything else is a protocol error. */
  async expect(word: string, timeoutMs: number, what = word): Promise<string[]> {
    const line = await this.next(timeoutMs, what);
    const parts = line.split(" ");
    if (parts[0] !== word)
      throw new MicrovmError(
        "MICROVM.GUEST_PROTOCOL",
        `expected ${word}, guest said ${JSON.stringify(line.slice(0, 200))}`,
      );
    return parts.slice(1);
  }

  fail(err: Error): void {
    if (this.failure) return;
    this.failure = err;
    const w = this.waiter;
    this.waiter = null;
    w?.reject(err);
  }

  private onData(chunk: string): void {
    if (this.failure) return;
    this.buffer += chunk;
    let nl: number;
    while ((nl = this.buffer.indexOf("\n")) >= 0) {
      const line = this.buffer.slice(0, nl).replace(/\r$/, "");
      this.buffer = this.buffer.slice(nl + 1);
      const w = this.waiter;
      if (w) {
        this.waiter = null;
        w.resolve(line);
      } else {
        this.lines.push(line);
        this.queuedBytes += line.length;
        if (this.lines.length > MAX_QUEUED_LINES || this.queuedBytes > MAX_QUEUED_BYTES) {
          // Drop what is queued (nothing of it will be read) and end the channel: the VM is lost.
          this.lines = [];
          this.queuedBytes = 0;
          this.buffer = "";
          this.fail(
            new MicrovmError(
              "MICROVM.GUEST_PROTOCOL",
              `guest sent more than ${MAX_QUEUED_LINES} control lines or ${MAX_QUEUED_BYTES} bytes nobody asked for`,
            ),
          );
          this.socket.destroy();
          return;
        }
      }
    }
    if (this.buffer.length > MAX_LINE) {
      this.fail(new MicrovmError("MICROVM.GUEST_PROTOCOL", "control line too long"));
      this.socket.destroy();
    }
  }
}
