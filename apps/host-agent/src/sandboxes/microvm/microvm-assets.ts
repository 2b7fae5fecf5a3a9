// Guest assets, built only from Debian packages: the cloud kernel, our busybox initramfs (modules +
// init + agent) and the tenant-agnostic base root filesystem (busybox-static in an ext4 made with
// `mkfs.ext4 -d`, no mount). Cached by content: the key hashes every input, a finished build is a
// directory named by the key, and a half-finished one never becomes visible (build, then rename).
import { createHash } from "node:crypto";
import { copyFile, mkdir, mkdtemp, readFile, rename, rm, stat, symlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { MicrovmError } from "./microvm-errors.ts";
import { findCloudKernel, findTool, run } from "./host-tools.ts";

const GUEST_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), "guest");
// Bump when the layout below changes in a way the inputs do not capture.
const BUILDER_VERSION = "2";
const MODULES = [
  "virtio_ring",
  "virtio",
  "virtio_mmio",
  "virtio_blk",
  "virtio_console",
  "failover",
  "net_failover",
  "virtio_net",
  "overlay",
];
const MODULE_PATHS: Record<string, string> = {
  virtio_ring: "kernel/drivers/virtio/virtio_ring.ko",
  virtio: "kernel/drivers/virtio/virtio.ko",
  virtio_mmio: "kernel/drivers/virtio/virtio_mmio.ko",
  virtio_blk: "kernel/drivers/block/virtio_blk.ko",
  virtio_console: "kernel/drivers/char/virtio_console.ko",
  failover: "kernel/net/core/failover.ko",
  net_failover: "kernel/drivers/net/net_failover.ko",
  virtio_net: "kernel/drivers/net/virtio_net.ko",
  overlay: "kernel/fs/overlayfs/overlay.ko",
};

export interface MicrovmAssets {
  key: string;
  dir: string;
  vmlinuz: string;
  initramfs: string;
  baseRootfs: string;
}

export async function ensureMicrovmAssets(cacheDir: string): Promise<MicrovmAssets> {
  const kernel = await findCloudKernel();
  const busybox = await findTool("busybox");
  const mkfs = await findTool("mkfs");
  const inputs = await readInputs(kernel.vmlinuz, kernel.modulesDir, busybox);
  const key = inputs.hash;
  const dir = path.join(cacheDir, key);
  const assets = {
    key,
    dir,
    vmlinuz: path.join(dir, "vmlinuz"),
    initramfs: path.join(dir, "initramfs.cpio"),
    baseRootfs: path.join(dir, "base-rootfs.ext4"),
  };
  if (
    await stat(path.join(dir, "complete")).then(
      () => true,
      () => false,
    )
  )
    return assets;

  await mkdir(cacheDir, { recursive: true });
  const staging = await mkdtemp(path.join(cacheDir, `.build-${key.slice(0, 12)}-`));
  try {
    await copyFile(kernel.vmlinuz, path.join(staging, "vmlinuz"));
    await buildInitramfs(staging, inputs, busybox, kernel.modulesDir);
    await buildBaseRootfs(staging, busybox, mkfs);
    await writeFile(path.join(staging, "complete"), `${new Date().toISOString()}\n`);
    await rename(staging, dir).catch(async (err: NodeJS.ErrnoException) => {
      // Another builder finished first with the same content: keep theirs.
      if (err.code !== "ENOTEMPTY" && err.code !== "EEXIST") throw err;
    });
  } catch (err) {
    throw err instanceof MicrovmError
      ? err
      : new MicrovmError("MICROVM.ASSET_BUILD_FAILED", String(err instanceof Error ? err.message : err));
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
  return assets;
}

interface Inputs {
  hash: string;
  init: Buffer;
  agent: Buffer;
  /** The CRNG reseed helper's source; compiled into the initramfs when a C compiler is present. */
  reseed: Buffer;
  cc: string | null;
}

async function readInputs(vmlinuz: string, modulesDir: string, busybox: string): Promise<Inputs> {
  const h = createHash("sha256").update(`kiln-microvm-assets/${BUILDER_VERSION}\0`);
  const init = await readFile(path.join(GUEST_DIR, "init.sh"));
  const agent = await readFile(path.join(GUEST_DIR, "agent.sh"));
  const reseed = await readFile(path.join(GUEST_DIR, "reseed.c"));
  const cc = await findCompiler();
  for (const part of [init, agent, reseed, Buffer.from(cc ?? "no-cc")]) h.update(part).update("\0");
  for (const part of [await readFile(vmlinuz), await readFile(busybox)]) h.update(part).update("\0");
  for (const m of MODULES) h.update(await readFile(path.join(modulesDir, MODULE_PATHS[m]!))).update("\0");
  return { hash: h.digest("hex").slice(0, 32), init, agent, reseed, cc };
}

async function buildInitramfs(staging: string, inputs: Inputs, busybox: string, modulesDir: string): Promise<void> {
  const root = path.join(staging, "initramfs");
  for (const d of ["bin", "dev", "proc", "sys", "run", "kiln", "lib/modules"])
    await mkdir(path.join(root, d), { recursive: true });
  await copyFile(busybox, path.join(root, "bin/busybox"));
  await symlink("busybox", path.join(root, "bin/sh"));
  await writeFile(path.join(root, "init"), inputs.init, { mode: 0o755 });
  await writeFile(path.join(root, "kiln/agent.sh"), inputs.agent, { mode: 0o755 });
  if (inputs.cc) {
    // Static: the guest has no libc. Without a compiler the guest still mixes the host's entropy in,
    // and reseeds when the kernel's own timer says so (weaker; ADR 0011).
    const src = path.join(staging, "reseed.c");
    await writeFile(src, inputs.reseed);
    // A compiler without a static libc (no libc6-dev) cannot link it: the guest then goes without.
    await run(inputs.cc, ["-static", "-Os", "-s", "-o", path.join(root, "kiln/reseed"), src]).catch(() => undefined);
    await rm(src);
  }
  for (const m of MODULES)
    await copyFile(path.join(modulesDir, MODULE_PATHS[m]!), path.join(root, "lib/modules", `${m}.ko`));
  // newc cpio through busybox (no host cpio needed); file list on stdin.
  const list = (await run(busybox, ["find", "."], { cwd: root })).split("\n").filter(Boolean).sort().join("\n");
  await writeFile(path.join(staging, "initramfs.list"), `${list}\n`);
  await run(busybox, ["sh", "-c", `${busybox} cpio -o -H newc < ../initramfs.list > ../initramfs.cpio`], { cwd: root });
  await rm(root, { recursive: true, force: true });
  await rm(path.join(staging, "initramfs.list"));
}

/** The base image: busybox applets as /bin/*, a passwd for root, nothing else. */
async function buildBaseRootfs(staging: string, busybox: string, mkfs: string): Promise<void> {
  const root = path.join(staging, "base-root");
  for (const d of [
    "bin",
    "etc",
    "usr/bin",
    "usr/local/bin",
    "tmp",
    "workspace",
    "home/kiln",
    "proc",
    "dev",
    "sys",
    "root",
  ])
    await mkdir(path.join(root, d), { recursive: true });
  await copyFile(busybox, path.join(root, "bin/busybox"));
  await installAppletLinks(root, busybox);
  await writeFile(path.join(root, "etc/passwd"), "root:x:0:0:root:/root:/bin/sh\n");
  await writeFile(path.join(root, "etc/group"), "root:x:0:\n");
  await buildExt4(mkfs, root, path.join(staging, "base-rootfs.ext4"));
  await rm(root, { recursive: true, force: true });
}

async function installAppletLinks(root: string, busybox: string): Promise<void> {
  const applets = (await run(busybox, ["--list"]))
    .split("\n")
    .filter((a) => /^[a-z0-9_.[-]+$/.test(a) && a !== "busybox");
  for (const a of applets) await symlink("busybox", path.join(root, "bin", a)).catch(() => undefined);
}

/** ext4 sized to its content plus headroom; no journal (read-only root, nothing to replay). */
export async function buildExt4(mkfs: string, dir: string, out: string): Promise<void> {
  const usedKb = Number((await run("/usr/bin/du", ["-sk", "--apparent-size", dir])).split("\t")[0] ?? "0");
  const sizeMb = Math.ceil((usedKb * 1.3) / 1024) + 16;
  await run(mkfs, ["-q", "-F", "-O", "^has_journal", "-E", "root_owner=0:0", "-d", dir, out, `${sizeMb}M`]);
}

/** A C compiler that can link statically (gcc with libc6-dev), or null. */
async function findCompiler(): Promise<string | null> {
  for (const cc of ["/usr/bin/cc", "/usr/bin/gcc"]) {
    const ok = await stat(cc).then(
      () => true,
      () => false,
    );
    if (ok) return cc;
  }
  return null;
}
