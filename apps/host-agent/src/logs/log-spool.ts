// The attempt's disk spool: every cut chunk is written at its stream offset in
// <spool dir>/<stream>.log, so unacknowledged bytes survive a slow or unreachable control plane
// without holding them in memory. Bounded by the per-attempt log limit (only kept bytes are
// spooled). Removed when the attempt's log is settled.
import { mkdir, open, rm, type FileHandle } from "node:fs/promises";
import path from "node:path";
import type { LogStream } from "@kiln/domain";

export class LogSpool {
  private readonly files = new Map<LogStream, Promise<FileHandle>>();
  private ready: Promise<void> | null = null;

  constructor(private readonly dir: string) {}

  async write(stream: LogStream, offset: number, data: Buffer): Promise<void> {
    const fh = await this.file(stream);
    let done = 0;
    while (done < data.length) {
      const { bytesWritten } = await fh.write(data, done, data.length - done, offset + done);
      done += bytesWritten;
    }
  }

  async read(stream: LogStream, offset: number, length: number): Promise<Buffer> {
    const fh = await this.file(stream);
    const buf = Buffer.alloc(length);
    let done = 0;
    while (done < length) {
      const { bytesRead } = await fh.read(buf, done, length - done, offset + done);
      if (bytesRead === 0) throw new Error(`spool ${stream} is short at ${offset + done}`);
      done += bytesRead;
    }
    return buf;
  }

  async remove(): Promise<void> {
    const handles = [...this.files.values()];
    this.files.clear();
    for (const h of handles) await h.then((fh) => fh.close()).catch(() => undefined);
    await rm(this.dir, { recursive: true, force: true });
  }

  private file(stream: LogStream): Promise<FileHandle> {
    let f = this.files.get(stream);
    if (!f) {
      this.ready ??= mkdir(this.dir, { recursive: true, mode: 0o700 }).then(() => undefined);
      f = this.ready.then(() => open(path.join(this.dir, `${stream}.log`), "w+", 0o600));
      this.files.set(stream, f);
    }
    return f;
  }
}
