// The node-local image store under <KILN_WORK_DIR>/.images: verified layer blobs
// (blobs/<hex>) and unpacked rootfs directories (rootfs/<manifest hex>/, size in <hex>.size).
// One byte budget covers both; when it is exceeded the least recently used entries that no
// attempt holds are deleted. In-use entries are never evicted, so the budget can be overshot
// while a large image is in use (logged by the caller). Temporary names (*.tmp-*) are swept at open.
import { mkdir, readdir, readFile, rm, stat, utimes, writeFile } from "node:fs/promises";
import path from "node:path";
import { digestHex } from "@kiln/oci";

type Kind = "blob" | "rootfs";

interface Entry {
  kind: Kind;
  digest: string;
  bytes: number;
  lastUsed: number;
  holds: number;
}

export class ImageCache {
  private readonly entries = new Map<string, Entry>();
  private opened: Promise<void> | null = null;
  /** Tiebreaker so entries touched in the same millisecond still order by use. */
  private clock = 0;

  constructor(
    readonly dir: string,
    readonly budgetBytes: number,
  ) {}

  blobPath(digest: string): string {
    return path.join(this.dir, "blobs", digestHex(digest));
  }

  rootfsPath(digest: string): string {
    return path.join(this.dir, "rootfs", digestHex(digest));
  }

  /** A fresh temporary path beside the final one (same filesystem, so rename is atomic). */
  tempPath(kind: Kind, digest: string): string {
    const base = kind === "blob" ? this.blobPath(digest) : this.rootfsPath(digest);
    return `${base}.tmp-${process.pid}-${Math.random().toString(36).slice(2, 10)}`;
  }

  open(): Promise<void> {
    this.opened ??= this.load();
    return this.opened;
  }

  private async load(): Promise<void> {
    for (const kind of ["blob", "rootfs"] as const) {
      const dir = path.join(this.dir, kind === "blob" ? "blobs" : "rootfs");
      await mkdir(dir, { recursive: true });
      for (const name of await readdir(dir)) {
        const abs = path.join(dir, name);
        if (name.includes(".tmp-")) {
          await rm(abs, { recursive: true, force: true }); // a crash mid-pull or mid-unpack
          continue;
        }
        if (!/^[0-9a-f]{64}$/.test(name)) continue;
        const st = await stat(abs);
        let bytes = st.size;
        if (kind === "rootfs") {
          const size = Number(await readFile(`${abs}.size`, "utf8").catch(() => "NaN"));
          if (!Number.isFinite(size)) {
            await rm(abs, { recursive: true, force: true }); // unpack finished but never recorded
            continue;
          }
          bytes = size;
        }
        this.entries.set(`${kind}:${name}`, { kind, digest: `sha256:${name}`, bytes, lastUsed: st.mtimeMs, holds: 0 });
      }
    }
  }

  has(kind: Kind, digest: string): boolean {
    return this.entries.has(`${kind}:${digestHex(digest)}`);
  }

  totalBytes(): number {
    let n = 0;
    for (const e of this.entries.values()) n += e.bytes;
    return n;
  }

  /** Marks an entry in use (not evictable) until the returned release() is called. */
  hold(kind: Kind, digest: string): () => void {
    const e = this.entries.get(`${kind}:${digestHex(digest)}`);
    if (!e) throw new Error(`${kind} ${digest} is not in the image cache`);
    e.holds++;
    e.lastUsed = Date.now() + ++this.clock / 1e6;
    // Recency survives an agent restart through the mtime.
    void utimes(
      kind === "blob" ? this.blobPath(digest) : `${this.rootfsPath(digest)}.size`,
      new Date(),
      new Date(),
    ).catch(() => {});
    let released = false;
    return () => {
      if (released) return;
      released = true;
      e.holds--;
    };
  }

  /** Records a blob or rootfs that was just renamed into place. */
  async add(kind: Kind, digest: string, bytes: number): Promise<void> {
    if (kind === "rootfs") await writeFile(`${this.rootfsPath(digest)}.size`, String(bytes));
    this.entries.set(`${kind}:${digestHex(digest)}`, {
      kind,
      digest,
      bytes,
      lastUsed: Date.now() + ++this.clock / 1e6,
      holds: 0,
    });
  }

  /** Deletes an entry now (a failed digest check), held or not. */
  async evict(kind: Kind, digest: string): Promise<void> {
    this.entries.delete(`${kind}:${digestHex(digest)}`);
    if (kind === "blob") await rm(this.blobPath(digest), { force: true });
    else {
      await rm(`${this.rootfsPath(digest)}.size`, { force: true });
      await rm(this.rootfsPath(digest), { recursive: true, force: true });
    }
  }

  /** Evicts least recently used, unheld entries until the budget holds; returns what went. */
  async enforceBudget(): Promise<{ kind: Kind; digest: string; bytes: number }[]> {
    const evicted: { kind: Kind; digest: string; bytes: number }[] = [];
    let total = this.totalBytes();
    const candidates = [...this.entries.values()].filter((e) => e.holds === 0).sort((a, b) => a.lastUsed - b.lastUsed);
    for (const e of candidates) {
      if (total <= this.budgetBytes) break;
      await this.evict(e.kind, e.digest);
      total -= e.bytes;
      evicted.push({ kind: e.kind, digest: e.digest, bytes: e.bytes });
    }
    return evicted;
  }
}
