// The per-day platform keys (docs/adr/0037): one 32-byte key per due day, a file in
// KILN_SHRED_KEY_DIR named <due-day>.key, never in the database. Every data key due that day is
// wrapped under it, so a database backup holds only rows that nothing can open once the file is
// gone, and a copy of the key dir alone holds keys that open nothing without the rows.
import { randomBytes } from "node:crypto";
import { link, mkdir, open, readdir, readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { DomainError, dayStart } from "@kiln/domain";

const KEY_BYTES = 32;
const FILE = /^(\d{4}-\d{2}-\d{2})\.key$/;

// No in-memory cache on purpose: a key another process destroyed must stop working here at once,
// and reading a 45-byte file costs nothing next to the object store round trip it precedes.
export class PlatformKeyStore {
  constructor(readonly dir: string) {}

  private file(dueDay: string): string {
    dayStart(dueDay); // refuses anything that is not a calendar day: no path games with the name
    return path.join(this.dir, `${dueDay}.key`);
  }

  /** The day's key, null once it was destroyed (or never made). */
  async get(dueDay: string): Promise<Buffer | null> {
    let text: string;
    try {
      text = await readFile(this.file(dueDay), "utf8");
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return null;
      throw new DomainError("SHRED.KEY_UNAVAILABLE", `cannot read platform key ${dueDay}: ${(err as Error).message}`);
    }
    const key = Buffer.from(text.trim(), "base64");
    if (key.length !== KEY_BYTES)
      throw new DomainError("SHRED.KEY_UNAVAILABLE", `platform key ${dueDay} is not ${KEY_BYTES} bytes`);
    return key;
  }

  /** The day's key, made if absent. Two processes racing both end up with the one that won link(). */
  async getOrCreate(dueDay: string): Promise<Buffer> {
    const existing = await this.get(dueDay);
    if (existing) return existing;
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    const tmp = path.join(this.dir, `.${dueDay}.${randomBytes(6).toString("hex")}.tmp`);
    await writeFile(tmp, `${randomBytes(KEY_BYTES).toString("base64")}\n`, { mode: 0o600, flag: "wx" });
    try {
      await link(tmp, this.file(dueDay)); // fails with EEXIST instead of replacing a key in use
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    } finally {
      await rm(tmp, { force: true });
    }
    const key = await this.get(dueDay);
    if (!key) throw new DomainError("SHRED.KEY_UNAVAILABLE", `platform key ${dueDay} vanished while being made`);
    return key;
  }

  /**
   * Overwrites the file with zeros, syncs, then unlinks it. On a copy-on-write or wear-levelled
   * disk the overwrite is best effort; the unlink (and the rows' deletion) is what the proof rests on.
   */
  async destroy(dueDay: string): Promise<boolean> {
    const file = this.file(dueDay);
    let fh: Awaited<ReturnType<typeof open>>;
    try {
      fh = await open(file, "r+");
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return false;
      throw err;
    }
    try {
      const { size } = await fh.stat();
      await fh.write(Buffer.alloc(size), 0, size, 0);
      await fh.sync();
    } finally {
      await fh.close();
    }
    await rm(file, { force: true });
    return true;
  }

  /** Due days that still have a key file. */
  async list(): Promise<string[]> {
    const names = await readdir(this.dir).catch((err: NodeJS.ErrnoException) => {
      if (err.code === "ENOENT") return [] as string[];
      throw err;
    });
    return names.flatMap((n) => FILE.exec(n)?.[1] ?? []).sort();
  }
}
