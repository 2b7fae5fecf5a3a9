// Where the real projects' sources come from (issue 30 item 5): Debian's archive of upstream
// tarballs, downloaded at test time rather than committed, each pinned by the SHA-256 of its
// Debian source package (.dsc, Checksums-Sha256) and verified before it is unpacked. A cached
// tarball is verified again on every use, so a corrupt cache fails loudly instead of testing
// something else. See e2e/fixtures/real-projects/README.md.
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdir, mkdtemp, readdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

export interface RealProjectSource {
  url: string;
  sha256: string;
  /** The folder the tarball unpacks into (stripped: the project's files sit at the folder's root). */
  topDir: string;
}

const DEBIAN_POOL = "http://deb.debian.org/debian/pool/main";

export const REAL_PROJECT_SOURCES: Readonly<Record<string, RealProjectSource>> = {
  picocolors: {
    url: `${DEBIAN_POOL}/n/node-picocolors/node-picocolors_1.0.0.orig.tar.gz`,
    sha256: "46640a27ab190445d5bf21a1412c80041dd1a3d7b45c2d396c30724d9d6fa3b3",
    topDir: "picocolors-1.0.0",
  },
  toolz: {
    url: `${DEBIAN_POOL}/t/toolz/toolz_0.12.0.orig.tar.gz`,
    sha256: "04d555d7ccb3c84301eaad310dd27ba511ae3dcf331ada5828d7cc03942f2c2e",
    topDir: "toolz-0.12.0",
  },
  jsmn: {
    url: `${DEBIAN_POOL}/j/jsmn/jsmn_1.1.0.orig.tar.gz`,
    sha256: "5f0913a10657fe7ec8d5794ccf00a01000e3e1f2f1e1f143c34a0f7b47edcb38",
    topDir: "jsmn-1.1.0",
  },
};

/** ~/.cache/kiln/real-projects, or KILN_REAL_PROJECTS_CACHE. */
export function realProjectsCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.KILN_REAL_PROJECTS_CACHE) return path.resolve(env.KILN_REAL_PROJECTS_CACHE);
  return path.join(env.XDG_CACHE_HOME || path.join(os.homedir(), ".cache"), "kiln", "real-projects");
}

const sha256 = (bytes: Buffer): string => createHash("sha256").update(bytes).digest("hex");

async function download(url: string): Promise<Buffer> {
  let res: Response;
  try {
    res = await fetch(url, { signal: AbortSignal.timeout(120_000) });
  } catch (err) {
    throw new Error(`real project source: downloading ${url} failed: ${(err as Error).message}`, { cause: err });
  }
  if (!res.ok) throw new Error(`real project source: downloading ${url} answered HTTP ${res.status}`);
  return Buffer.from(await res.arrayBuffer());
}

/**
 * The tarball's bytes, from the cache or downloaded into it; throws (never falls back) when the
 * download fails or its SHA-256 is not the pinned one.
 */
async function realProjectTarball(source: RealProjectSource, cacheDir = realProjectsCacheDir()): Promise<Buffer> {
  const cached = path.join(cacheDir, `${source.sha256}-${path.basename(new URL(source.url).pathname)}`);
  const hit = await readFile(cached).catch(() => null);
  if (hit && sha256(hit) === source.sha256) return hit;
  const bytes = await download(source.url);
  const got = sha256(bytes);
  if (got !== source.sha256)
    throw new Error(`real project source: ${source.url} has SHA-256 ${got}, expected ${source.sha256} (pinned)`);
  await mkdir(cacheDir, { recursive: true });
  // Written aside and renamed: a concurrent run never reads half a tarball.
  const tmp = `${cached}.${process.pid}.tmp`;
  await writeFile(tmp, bytes);
  await rename(tmp, cached);
  return bytes;
}

/** The verified tarball's files as text, keyed by their paths below `topDir`. */
export async function realProjectFiles(source: RealProjectSource, cacheDir?: string): Promise<Record<string, string>> {
  const bytes = await realProjectTarball(source, cacheDir);
  const dir = await mkdtemp(path.join(os.tmpdir(), "kiln-real-src-"));
  try {
    const archive = path.join(dir, "src.tar.gz");
    await writeFile(archive, bytes);
    const out = path.join(dir, "out");
    await mkdir(out);
    await run("tar", ["-xzf", archive, "-C", out, "--no-same-owner"]);
    const root = path.join(out, source.topDir);
    const files: Record<string, string> = {};
    for (const entry of await readdir(root, { recursive: true, withFileTypes: true })) {
      if (!entry.isFile()) continue;
      const full = path.join(entry.parentPath, entry.name);
      files[path.relative(root, full).split(path.sep).join("/")] = await readFile(full, "utf8");
    }
    if (!Object.keys(files).length)
      throw new Error(`real project source: ${source.url} has no files under ${source.topDir}/`);
    return files;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
