// Kiln's tenant-agnostic base image, built only from Debian's busybox-static: /bin/busybox, one
// relative symlink per applet (so the links resolve inside any root), /etc/passwd and /etc/group,
// and the usual empty directories. One layer; fixed mtimes and owners, so the digest only changes
// when busybox does.
import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { execFile } from "node:child_process";
import path from "node:path";
import { promisify } from "node:util";
import {
  buildImage,
  parseImageRef,
  parseRegistryConfig,
  pushImage,
  RegistryClient,
  registryEndpoint,
  writeTar,
  type BuiltImage,
  type RegistryConfig,
  type TarEntry,
} from "@kiln/oci";

const execFileAsync = promisify(execFile);
export const BUSYBOX = "/bin/busybox";
export const BASE_IMAGE_NAME = "kiln/base:1";

export async function buildBaseImage(busybox = BUSYBOX): Promise<BuiltImage> {
  if (!existsSync(busybox)) throw new Error(`${busybox} not found: apt-get install busybox-static`);
  const binary = await readFile(busybox);
  const { stdout } = await execFileAsync(busybox, ["--list-full"]);
  const applets = stdout
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith("/") && !l.includes(".."))
    .sort();
  const dirs = new Set([
    "bin",
    "dev",
    "etc",
    "home",
    "proc",
    "root",
    "run",
    "sbin",
    "sys",
    "tmp",
    "usr",
    "usr/bin",
    "usr/sbin",
    "var",
    "var/tmp",
  ]);
  for (const a of applets) dirs.add(path.posix.dirname(a));
  const entries: TarEntry[] = [...dirs].sort().map((d) => ({
    path: d,
    type: "dir",
    mode: d === "tmp" || d === "var/tmp" ? 0o1777 : d === "root" ? 0o700 : 0o755,
  }));
  entries.push({ path: "bin/busybox", type: "file", mode: 0o755, data: binary });
  for (const a of applets) {
    if (a === "bin/busybox") continue;
    const rel = path.posix.relative(path.posix.dirname(a), "bin/busybox");
    entries.push({ path: a, type: "symlink", mode: 0o777, linkname: rel });
  }
  entries.push(
    {
      path: "etc/passwd",
      type: "file",
      mode: 0o644,
      data: "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n",
    },
    { path: "etc/group", type: "file", mode: 0o644, data: "root:x:0:\nnogroup:x:65534:\n" },
    { path: "etc/hosts", type: "file", mode: 0o644, data: "127.0.0.1\tlocalhost\n" },
  );
  return buildImage({ layers: [writeTar(entries)] });
}

export interface PublishedImage {
  /** e.g. 127.0.0.1:5000/kiln/base:1 */
  ref: string;
  /** The linux/amd64 manifest's digest (what a frozen run pins). */
  manifestDigest: string;
  indexDigest: string;
  uploadedBytes: number;
}

/** Builds and pushes the base image to `registry` (host:port) as `name` (repository:tag). */
export async function publishBaseImage(opts: {
  registry: string;
  name?: string;
  config?: RegistryConfig;
}): Promise<PublishedImage> {
  const ref = `${opts.registry}/${opts.name ?? BASE_IMAGE_NAME}`;
  const parsed = parseImageRef(ref);
  if (!parsed.tag || parsed.digest) throw new Error(`publish needs repository:tag, got ${ref}`);
  const image = await buildBaseImage();
  // The caller named this registry on purpose: it is allowed even when KILN_REGISTRIES omits it.
  const config = opts.config ?? parseRegistryConfig(undefined);
  const allowed = Object.hasOwn(config, parsed.registry) ? config : { ...config, [parsed.registry]: {} };
  const client = new RegistryClient(registryEndpoint(allowed, parsed.registry));
  const { uploadedBytes } = await pushImage(client, parsed.repository, parsed.tag, image);
  return { ref, manifestDigest: image.manifestDigest, indexDigest: image.indexDigest, uploadedBytes };
}
