// The job's writable disk (ADR 0041): one sparse ext4 image file per sandbox, for the microvm driver
// attached as the VM's second virtio block device and mounted by the guest as the workspace, /tmp,
// $HOME and the root's writable layer; for the process driver loop-mounted by the (root) agent. It is a copy of an empty template made once per disk size (`cp
// --sparse=always`: 30 ms for 10 GiB here, against 93 ms for a fresh mkfs; docs/benchmarks.md), and
// dies with the run directory at destroy. Sparse: the host pays only for what the job writes.
import { randomBytes } from "node:crypto";
import { mkdir, rename, rm, stat } from "node:fs/promises";
import path from "node:path";
import { execFile } from "node:child_process";

/** The disk's file name in a run directory (and, jailed, in QEMU's view). */
export const WORK_DISK_NAME = "disk.img";

export class WorkDisks {
  private templates = new Map<number, Promise<string>>();

  constructor(
    private readonly dir: string,
    private readonly mkfsPath: string,
  ) {}

  /** A fresh, empty disk of `diskMiB` in `runDir` (a jailed QEMU's uid gets it in vm-process.ts). */
  async create(runDir: string, diskMiB: number): Promise<string> {
    const template = await this.template(diskMiB);
    const disk = path.join(runDir, WORK_DISK_NAME);
    await runTool("/bin/cp", ["--sparse=always", template, disk]);
    return disk;
  }

  private template(diskMiB: number): Promise<string> {
    if (!Number.isSafeInteger(diskMiB) || diskMiB < 16)
      return Promise.reject(new Error(`disk size ${diskMiB} MiB is below 16 MiB`));
    let pending = this.templates.get(diskMiB);
    if (!pending) {
      pending = this.build(diskMiB);
      pending.catch(() => this.templates.delete(diskMiB));
      this.templates.set(diskMiB, pending);
    }
    return pending;
  }

  private async build(diskMiB: number): Promise<string> {
    // The mkfs options are part of the name: a template made with other options is never reused.
    const out = path.join(this.dir, `work-${diskMiB}M-v1.ext4`);
    if (
      await stat(out).then(
        () => true,
        () => false,
      )
    )
      return out;
    await mkdir(this.dir, { recursive: true });
    const tmp = `${out}.${randomBytes(4).toString("hex")}.tmp`;
    try {
      // No journal (the disk dies with the VM, nothing to replay), no root reserve (the job's steps
      // run as root in the guest and would otherwise see 5% more than a non-root user).
      await runTool(this.mkfsPath, [
        "-q",
        "-F",
        "-O",
        "^has_journal",
        "-m",
        "0",
        "-E",
        "root_owner=0:0",
        tmp,
        `${diskMiB}M`,
      ]);
      await rename(tmp, out);
    } finally {
      await rm(tmp, { force: true });
    }
    return out;
  }
}

/** Runs a program to completion; rejects with its stderr on failure. */
export function runTool(file: string, args: string[], timeoutMs = 120_000): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      file,
      args,
      { timeout: timeoutMs, env: { PATH: "/usr/sbin:/usr/bin:/sbin:/bin" } },
      (err, stdout, stderr) => {
        if (err) reject(new Error(`${file} ${args.join(" ")}: ${String(stderr).trim().slice(0, 300) || err.message}`));
        else resolve(String(stdout));
      },
    );
  });
}
