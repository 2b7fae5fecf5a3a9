// Applies image layers to a rootfs directory without ever letting a layer write outside it.
// Rules (ADR 0012):
//  - names are relative, without `..`; an absolute name or one that climbs fails the image;
//  - nothing is written *through* a symlink: every parent is checked with lstat and a symlink
//    parent fails the image; files are opened O_NOFOLLOW|O_EXCL after removing what was there;
//  - hardlinks must point at a regular file already inside the rootfs;
//  - symlinks are created as written (an absolute target means "inside this root" to the guest),
//    except relative ones that climb above the root, which are skipped;
//  - device nodes, fifos and unknown types are skipped; setuid/setgid bits are stripped;
//  - OCI whiteouts: `.wh.<name>` deletes <name> from lower layers, `.wh..wh..opq` empties the
//    directory of everything lower layers put there;
//  - byte and entry budgets across all layers (IMAGE.TOO_LARGE).
import { constants } from "node:fs";
import { chmod, link, lstat, mkdir, open, readdir, rm, symlink } from "node:fs/promises";
import path from "node:path";
import { ImageError } from "@kiln/oci";
import type { TarItem } from "../shared/tar-reader.ts";

export interface UnpackBudget {
  maxBytes: number;
  maxEntries: number;
}

export interface UnpackStats {
  entries: number;
  bytes: number;
  files: number;
  dirs: number;
  symlinks: number;
  hardlinks: number;
  whiteouts: number;
  skipped: { devices: number; fifos: number; escapingSymlinks: number; other: number };
  strippedSetid: number;
}

function newStats(): UnpackStats {
  return {
    entries: 0,
    bytes: 0,
    files: 0,
    dirs: 0,
    symlinks: 0,
    hardlinks: 0,
    whiteouts: 0,
    skipped: { devices: 0, fifos: 0, escapingSymlinks: 0, other: 0 },
    strippedSetid: 0,
  };
}

const WH = ".wh.";
const OPAQUE = ".wh..wh..opq";

const unsafe = (name: string, why: string) =>
  new ImageError("IMAGE.UNSAFE_LAYER", `layer entry ${JSON.stringify(name.slice(0, 200))} ${why}`);

/** Splits a tar name into safe components, or throws UNSAFE_LAYER. "" / "." give []. */
function safeParts(name: string): string[] {
  if (name.includes("\0")) throw unsafe(name, "contains a NUL byte");
  if (name.startsWith("/")) throw unsafe(name, "is an absolute path");
  const parts = name.split("/").filter((p) => p !== "" && p !== ".");
  if (parts.includes("..")) throw unsafe(name, "climbs out with ..");
  return parts;
}

export class LayerApplier {
  /** Directory modes applied after the last layer, so a 0555 dir does not block its own children. */
  private readonly dirModes = new Map<string, number>();
  /**
   * Directories already proven real (lstat) during this unpack, to skip re-checking every parent of
   * every entry. Only this unpack changes the tree, and any removal clears the set, so a directory
   * later replaced by a symlink is checked again.
   */
  private readonly verifiedDirs = new Set<string>();
  readonly stats = newStats();

  constructor(
    private readonly root: string,
    private readonly budget: UnpackBudget,
  ) {}

  async apply(items: AsyncIterable<TarItem>, signal?: AbortSignal): Promise<void> {
    const created = new Set<string>(); // paths this layer made; an opaque whiteout keeps them
    for await (const { header, body } of items) {
      if (signal?.aborted) throw new Error("image preparation aborted");
      if (++this.stats.entries > this.budget.maxEntries)
        throw new ImageError("IMAGE.TOO_LARGE", `image has more than ${this.budget.maxEntries} entries`);
      const parts = safeParts(header.path);
      if (parts.length === 0) continue; // the root itself
      const base = parts[parts.length - 1]!;
      const rel = parts.join("/");
      if (base.startsWith(WH)) {
        await this.whiteout(parts, created);
        continue;
      }
      switch (header.type) {
        case "chardev":
        case "blockdev":
          this.stats.skipped.devices++;
          continue;
        case "fifo":
          this.stats.skipped.fifos++;
          continue;
        case "other":
          this.stats.skipped.other++;
          continue;
        case "symlink":
          if (escapes(parts, header.linkname)) {
            this.stats.skipped.escapingSymlinks++;
            continue;
          }
          break;
        default:
          break;
      }
      const dest = await this.prepareDest(parts, header.type === "dir");
      created.add(rel);
      const mode = this.cleanMode(header.mode);
      if (header.type === "dir") {
        if (dest.existingDir === false) await mkdir(dest.abs, { mode: 0o700 });
        this.dirModes.set(dest.abs, mode);
        this.stats.dirs++;
      } else if (header.type === "file") {
        await this.writeFile(dest.abs, mode, header.size, body, header.path);
        this.stats.files++;
      } else if (header.type === "symlink") {
        if (header.linkname === "" || header.linkname.includes("\0"))
          throw unsafe(header.path, "is a symlink with an empty or NUL target");
        await symlink(header.linkname, dest.abs);
        this.stats.symlinks++;
      } else if (header.type === "hardlink") {
        const target = await this.resolveExisting(safeParts(header.linkname), header.path);
        await link(target, dest.abs);
        this.stats.hardlinks++;
      }
    }
  }

  /** Applies the deferred directory modes (deepest first). Call once after the last layer. */
  async finish(): Promise<void> {
    const dirs = [...this.dirModes.entries()].sort((a, b) => b[0].length - a[0].length);
    for (const [dir, mode] of dirs) {
      // Belt and braces: only ever chmod a real directory (chmod follows symlinks).
      if ((await lstat(dir)).isDirectory()) await chmod(dir, mode);
    }
  }

  private cleanMode(mode: number): number {
    if (mode & 0o6000) this.stats.strippedSetid++;
    return mode & 0o1777;
  }

  /** Walks (creating) the parents as real directories; clears whatever sits at the destination. */
  private async prepareDest(parts: string[], wantDir: boolean): Promise<{ abs: string; existingDir: boolean }> {
    const parent = await this.walkParents(parts, true);
    const abs = path.join(parent!, parts[parts.length - 1]!);
    const st = await lstat(abs).catch(() => null);
    if (st?.isDirectory() && wantDir) return { abs, existingDir: true };
    // rm never follows a symlink at `abs`: it removes the link itself.
    if (st) await this.remove(abs);
    return { abs, existingDir: false };
  }

  /**
   * The absolute parent directory of parts, each component a real directory (lstat, never
   * followed). A symlink or file in the way fails the image: writing through it could escape.
   * With create=false a missing component returns null.
   */
  private async walkParents(parts: string[], create: boolean): Promise<string | null> {
    let dir = this.root;
    for (const p of parts.slice(0, -1)) {
      dir = path.join(dir, p);
      if (this.verifiedDirs.has(dir)) continue;
      const st = await lstat(dir).catch(() => null);
      if (!st) {
        if (!create) return null;
        await mkdir(dir, { mode: 0o755 });
        this.verifiedDirs.add(dir);
        continue;
      }
      if (st.isDirectory()) {
        this.verifiedDirs.add(dir);
        continue;
      }
      if (st.isSymbolicLink())
        throw unsafe(
          parts.join("/"),
          `would be written through the symlink ${JSON.stringify(path.relative(this.root, dir))}`,
        );
      if (!st.isDirectory())
        throw unsafe(parts.join("/"), `has a non-directory parent ${JSON.stringify(path.relative(this.root, dir))}`);
    }
    return dir;
  }

  private async resolveExisting(parts: string[], name: string): Promise<string> {
    if (parts.length === 0) throw unsafe(name, "is a hardlink to the root");
    const parent = await this.walkParents(parts, false).catch(() => null);
    const abs = parent && path.join(parent, parts[parts.length - 1]!);
    const st = abs ? await lstat(abs).catch(() => null) : null;
    if (!abs || !st?.isFile())
      throw unsafe(name, "is a hardlink to something that is not a regular file inside the image");
    return abs;
  }

  private async writeFile(
    abs: string,
    mode: number,
    size: number,
    body: AsyncIterable<Buffer>,
    name: string,
  ): Promise<void> {
    if (this.stats.bytes + size > this.budget.maxBytes)
      throw new ImageError("IMAGE.TOO_LARGE", `image unpacks to more than ${this.budget.maxBytes} bytes`);
    const fh = await open(abs, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
    let written = 0;
    try {
      for await (const chunk of body) {
        await fh.write(chunk);
        written += chunk.length;
      }
      await fh.chmod(mode);
    } finally {
      await fh.close();
    }
    if (written !== size) throw unsafe(name, "is shorter than its header says");
    this.stats.bytes += written;
  }

  private async whiteout(parts: string[], created: Set<string>): Promise<void> {
    this.stats.whiteouts++;
    const base = parts[parts.length - 1]!;
    const parent = await this.walkParents(parts, false);
    if (!parent) return; // nothing below to hide
    const relDir = parts.slice(0, -1).join("/");
    if (base === OPAQUE) {
      for (const child of await readdir(parent)) {
        const rel = relDir ? `${relDir}/${child}` : child;
        if (!created.has(rel)) await this.remove(path.join(parent, child));
      }
      return;
    }
    const name = base.slice(WH.length);
    if (name === "" || name === "." || name === "..")
      throw unsafe(parts.join("/"), "is a whiteout for an invalid name");
    await this.remove(path.join(parent, name));
  }

  private async remove(abs: string): Promise<void> {
    this.verifiedDirs.clear();
    // A deferred chmod must never land on whatever replaces this path (say, a symlink out of the root).
    for (const dir of this.dirModes.keys()) if (dir === abs || dir.startsWith(`${abs}/`)) this.dirModes.delete(dir);
    await rm(abs, { recursive: true, force: true });
  }
}

/** True when a relative symlink target climbs above the root from where the link sits. */
function escapes(linkParts: string[], target: string): boolean {
  if (target.startsWith("/")) return false; // resolved inside the rootfs by whoever uses it as /
  let depth = linkParts.length - 1;
  for (const p of target.split("/")) {
    if (p === "..") depth--;
    else if (p !== "" && p !== ".") depth++;
    if (depth < 0) return true;
  }
  return false;
}
