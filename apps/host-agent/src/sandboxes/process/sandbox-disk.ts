// The process driver's work disk (ADR 0041): the attempt's sparse ext4 image (../work-disk.ts),
// loop-mounted by the root agent, with the sandbox's workspace, home and tmp bound onto directories
// in it. The job's writes are bounded by the size's disk (ENOSPC, never the host's disk full), and
// statfs says afterwards whether a failed step had filled it. Only a root agent can mount; an
// unprivileged one keeps the files on the host's disk (the isolation detail says so).
import { statfs } from "node:fs/promises";
import { mkdir, readFile } from "node:fs/promises";
import path from "node:path";
import { runTool, type WorkDisks } from "../work-disk.ts";

/** Below this many free bytes a failed step is taken to have filled its disk. */
const FULL_BELOW_BYTES = 1024 * 1024;
const MOUNT_DIR = ".disk";

export class SandboxDisk {
  private constructor(
    /** The disk's root: host-only scratch on the workspace's filesystem (Sandbox.hostScratchDir). */
    readonly mountPoint: string,
    private readonly binds: string[],
  ) {}

  /** Mounts a fresh disk of `diskMiB` under `root` and binds each of `dirs` (existing, empty) into it. */
  static async mount(disks: WorkDisks, root: string, diskMiB: number, dirs: string[]): Promise<SandboxDisk> {
    const image = await disks.create(root, diskMiB);
    const mountPoint = path.join(root, MOUNT_DIR);
    await mkdir(mountPoint, { mode: 0o700 });
    await runTool("/bin/mount", ["-o", "loop,nosuid,nodev,noatime", image, mountPoint]);
    const disk = new SandboxDisk(mountPoint, []);
    try {
      for (const dir of dirs) {
        const inDisk = path.join(mountPoint, path.basename(dir));
        await mkdir(inDisk, { mode: 0o700 });
        await runTool("/bin/mount", ["--bind", inDisk, dir]);
        disk.binds.push(dir);
      }
    } catch (err) {
      await disk.unmount();
      throw err;
    }
    return disk;
  }

  /** True when the disk has (almost) no room left. */
  async full(): Promise<boolean> {
    const s = await statfs(this.mountPoint).catch(() => null);
    return s !== null && s.bavail * s.bsize < FULL_BELOW_BYTES;
  }

  /** Lazily unmounts the binds and the disk (detaching its loop device); the image file stays for removeTree. */
  async unmount(): Promise<void> {
    for (const dir of this.binds.splice(0).reverse()) await runTool("/bin/umount", ["-l", dir]).catch(() => undefined);
    await runTool("/bin/umount", ["-l", "-d", this.mountPoint]).catch(() => undefined);
  }
}

/** Unmounts whatever a crashed agent left mounted under `root` (deepest first), before its removal. */
export async function unmountUnder(root: string): Promise<void> {
  const text = await readFile("/proc/self/mountinfo", "utf8").catch(() => "");
  const points = text
    .split("\n")
    .map((l) => l.split(" ")[4] ?? "")
    .filter((p) => p === root || p.startsWith(`${root}/`))
    .sort((a, b) => b.length - a.length);
  for (const p of points) await runTool("/bin/umount", ["-l", p]).catch(() => undefined);
}
