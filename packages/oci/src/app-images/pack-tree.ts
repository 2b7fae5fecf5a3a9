// One image layer from files of a directory tree (docs/adr/0046): the deployable images' app
// layer. GNU tar reads the given paths in the order given (sorted here, byte-wise) and, inside each
// directory, in name order; owners, mtimes and the pax header names are fixed and hard links are
// stored as files, so the same bytes on disk give the same layer on any machine and any day.
import { execFile } from "node:child_process";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";

const exec = promisify(execFile);

export interface PackTreeOptions {
  /** The directory the paths are relative to. */
  root: string;
  /** Files and directories (recursed) under `root`, relative, no `..`. */
  paths: readonly string[];
  /** tar --exclude patterns (matched against the relative names). */
  exclude?: readonly string[];
  /** Where the tree appears in the image, e.g. `app` for /app. */
  prefix: string;
  /** Every entry's mtime (seconds): the commit's time for a repository, a constant in tests. */
  epoch: number;
  outTar: string;
  /** A scratch file for the path list. */
  listFile: string;
}

const byBytes = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));

export async function packTree(opts: PackTreeOptions): Promise<void> {
  if (!/^[a-z0-9][a-z0-9._/-]*$/.test(opts.prefix)) throw new Error(`layer prefix ${opts.prefix} is not a plain path`);
  for (const p of opts.paths)
    if (path.isAbsolute(p) || p.split("/").includes("..") || p.includes("\0"))
      throw new Error(`${JSON.stringify(p)} is not a path inside the tree`);
  const sorted = [...new Set(opts.paths)].sort(byBytes);
  await writeFile(opts.listFile, sorted.map((p) => `${p}\0`).join(""));
  await exec("tar", [
    "--sort=name",
    `--mtime=@${opts.epoch}`,
    "--owner=0",
    "--group=0",
    "--numeric-owner",
    "--mode=go-w",
    "--hard-dereference",
    "--format=posix",
    "--pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime",
    // Member names only: symlink targets inside the tree stay relative and valid.
    `--transform=flags=r;s|^|${opts.prefix}/|`,
    ...(opts.exclude ?? []).map((e) => `--exclude=${e}`),
    "-C",
    opts.root,
    "--null",
    "--no-unquote",
    "--files-from",
    opts.listFile,
    "-cf",
    opts.outTar,
  ]);
}
