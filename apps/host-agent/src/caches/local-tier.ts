// The node-local cache tier: verified archives kept on the host by digest, under a byte budget,
// least recently used first out. A file here is only ever a candidate: every restore re-verifies
// the digest while extracting, so a corrupted or planted file is a miss (and is removed), never a
// restore. Files are added by rename from a same-directory temp file: readers never see half of one.
import { randomUUID } from "node:crypto";
import { copyFile, mkdir, readdir, rename, rm, stat, utimes } from "node:fs/promises";
import path from "node:path";
import { countLocalEvictions } from "../metrics/index.ts";

const SHA = /^[0-9a-f]{64}$/;

export class LocalCacheTier {
  constructor(
    readonly dir: string,
    private readonly budgetBytes: number,
  ) {}

  async init(): Promise<void> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    // Temp files of a crashed agent are never complete archives.
    for (const f of await readdir(this.dir)) if (f.endsWith(".tmp")) await rm(path.join(this.dir, f), { force: true });
  }

  pathFor(sha256: string): string {
    if (!SHA.test(sha256)) throw new Error("not a sha256");
    return path.join(this.dir, `${sha256}.tar.gz`);
  }

  /** The archive's path when present; its mtime is bumped so LRU sees the use. */
  async lookup(sha256: string): Promise<string | null> {
    const p = this.pathFor(sha256);
    const s = await stat(p).catch(() => null);
    if (!s?.isFile()) return null;
    const now = new Date();
    await utimes(p, now, now).catch(() => undefined);
    return p;
  }

  tempPath(sha256: string, unique: string): string {
    return path.join(this.dir, `${sha256}.${unique}.tmp`);
  }

  /** Adopts a fully verified temp file, then trims the tier to its budget. */
  async adopt(tempFile: string, sha256: string): Promise<void> {
    await rename(tempFile, this.pathFor(sha256));
    await this.trim();
  }

  /**
   * Keeps a copy of an archive this host just packed and the control plane bound under that digest
   * (the next job here skips the download). Copied via a temp file when the spool is elsewhere.
   */
  async keep(file: string, sha256: string): Promise<void> {
    const temp = this.tempPath(sha256, randomUUID());
    try {
      await rename(file, temp).catch(async (err: NodeJS.ErrnoException) => {
        if (err.code !== "EXDEV") throw err;
        await copyFile(file, temp);
      });
      await this.adopt(temp, sha256);
    } finally {
      await rm(temp, { force: true });
    }
  }

  async remove(sha256: string): Promise<void> {
    await rm(this.pathFor(sha256), { force: true });
  }

  /** Oldest first until the tier fits. An archive being read survives its unlink (open fd). */
  async trim(): Promise<number> {
    const files: { p: string; size: number; mtime: number }[] = [];
    for (const f of await readdir(this.dir)) {
      if (!f.endsWith(".tar.gz")) continue;
      const p = path.join(this.dir, f);
      const s = await stat(p).catch(() => null);
      if (s?.isFile()) files.push({ p, size: s.size, mtime: s.mtimeMs });
    }
    let total = files.reduce((n, f) => n + f.size, 0);
    let removed = 0;
    files.sort((a, b) => a.mtime - b.mtime || (a.p < b.p ? -1 : 1));
    for (const f of files) {
      if (total <= this.budgetBytes) break;
      await rm(f.p, { force: true });
      total -= f.size;
      removed++;
    }
    countLocalEvictions(removed);
    return removed;
  }
}
