// The three ways a VM comes to life: a cold boot to the agent's READY, a restore of the warm-pool
// snapshot (paused until QMP `cont`, then PING/PONG proves the agent answers), and the one-off
// boot that saves that snapshot. Each VM gets its own run directory, marked as ours.
import { randomBytes } from "node:crypto";
import { createWriteStream } from "node:fs";
import { mkdir, rename, rm, writeFile } from "node:fs/promises";
import net from "node:net";
import path from "node:path";
import { pipeline } from "node:stream/promises";
import { sleep } from "../../timing.ts";
import { MicrovmError } from "./microvm-errors.ts";
import type { SizeResources } from "@kiln/domain";
import type { Accel, EgressRelay } from "./qemu-command.ts";
import { VmProcess } from "./vm-process.ts";
import type { WorkDisks } from "../work-disk.ts";

/** Marks a run directory as created by this driver, so leftover cleanup never deletes anything else. */
export const RUN_DIR_MARKER = ".kiln-microvm";
const SNAPSHOT_SAVE_TIMEOUT_MS = 120_000;

export interface BootConfig {
  qemuPath: string;
  accel: Accel;
  tscKhz: number | null;
  vmlinuz: string;
  initramfs: string;
  egressRelay: Omit<EgressRelay, "socket">;
  /** Where each VM's work disk comes from (a copy of the empty template of its size). */
  disks: WorkDisks;
}

/** What QEMU is told about the machine: the size's vCPUs and memory, and a fresh work disk in runDir. */
async function machineOf(cfg: BootConfig, runDir: string, size: SizeResources) {
  const workDisk = await cfg.disks.create(runDir, size.diskMiB);
  return { resources: { vcpus: size.vcpus, memoryMiB: size.memoryMiB }, workDisk };
}

export interface BootedVm {
  vm: VmProcess;
  runDir: string;
  bootMs: number;
}

/**
 * A fresh run directory. `claim` sees the name before the directory exists, so a concurrent
 * leftover sweep can never mistake it for a crashed agent's.
 */
export async function newRunDir(workDir: string, claim: (runDir: string) => void = () => undefined): Promise<string> {
  // Short random names, not attempt ids: unix socket paths are limited to 107 bytes, and pool VMs
  // exist before any attempt does.
  const runDir = path.join(workDir, `vm-${randomBytes(6).toString("hex")}`);
  claim(runDir);
  await mkdir(runDir, { mode: 0o700 });
  await writeFile(path.join(runDir, RUN_DIR_MARKER), "");
  return runDir;
}

export async function coldBoot(
  cfg: BootConfig,
  rootfs: string,
  runDir: string,
  timeoutMs: number,
  size: SizeResources,
  migrateSocket?: string,
): Promise<BootedVm> {
  const started = performance.now();
  const vm = await VmProcess.start(cfg.qemuPath, {
    ...cfg,
    ...(await machineOf(cfg, runDir, size)),
    rootfs,
    runDir,
    ...(migrateSocket ? { migrateSocket } : {}),
  });
  try {
    await vm.ctl.expect("READY", timeoutMs, "READY (boot)");
  } catch (err) {
    await vm.kill();
    throw new MicrovmError(
      vm.alive ? "MICROVM.BOOT_TIMEOUT" : "MICROVM.BOOT_FAILED",
      `guest did not become ready: ${err instanceof Error ? err.message : String(err)} (console: ${path.join(runDir, "console.log")})`,
    );
  }
  return { vm, runDir, bootMs: performance.now() - started };
}

export async function restoreSnapshot(
  cfg: BootConfig,
  rootfs: string,
  snapshot: string,
  runDir: string,
  timeoutMs: number,
  size: SizeResources,
): Promise<BootedVm> {
  const started = performance.now();
  // The snapshot was saved with this size's memory and a disk of this size (never mounted before
  // the save: init.sh), so a fresh copy of the empty template is exactly what the clone expects.
  const machine = await machineOf(cfg, runDir, size);
  const vm = await VmProcess.start(cfg.qemuPath, { ...cfg, ...machine, rootfs, runDir, incomingSnapshot: snapshot });
  try {
    // A snapshot taken from a stopped VM restores paused; `cont` only once the stream is loaded.
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const status = (await vm.qmp.execute("query-status")) as { status: string };
      if (status.status === "paused" || status.status === "postmigrate") break;
      if (status.status !== "inmigrate")
        throw new MicrovmError("MICROVM.SNAPSHOT_FAILED", `unexpected VM status ${status.status} after restore`);
      if (performance.now() > deadline)
        throw new MicrovmError("MICROVM.BOOT_TIMEOUT", "snapshot restore did not finish");
      await sleep(5);
    }
    await vm.qmp.execute("cont");
    vm.ctl.send("PING");
    await vm.ctl.expect("PONG", timeoutMs, "PING (restore)");
  } catch (err) {
    // A closed QMP or ctl socket may be seen just before QEMU's exit is.
    await Promise.race([vm.exited, sleep(500)]);
    const died = !vm.alive;
    await vm.kill();
    if (!died) throw err;
    throw new MicrovmError(
      "MICROVM.SNAPSHOT_FAILED",
      `qemu exited during restore: ${err instanceof Error ? err.message : String(err)}: ${vm.stderrText().trim().slice(0, 500)}`,
    );
  }
  return { vm, runDir, bootMs: performance.now() - started };
}

/**
 * Boots the base image once, waits until the agent is idle, and saves its RAM and device state.
 * The stream goes to a unix socket the agent listens on (`migrate unix:`), not `exec:cat`: the VM's
 * QEMU may not spawn (-sandbox spawn=deny), and a jailed one sees that socket only (qemu-jail.ts).
 */
export async function saveSnapshot(
  cfg: BootConfig,
  rootfs: string,
  workDir: string,
  file: string,
  bootTimeoutMs: number,
  size: SizeResources,
): Promise<void> {
  const runDir = await newRunDir(workDir);
  const tmp = `${file}.${randomBytes(4).toString("hex")}.tmp`;
  const sock = path.join(runDir, "migrate.sock");
  const server = net.createServer();
  const received = new Promise<void>((resolve, reject) => {
    server.once("connection", (c) => {
      server.close();
      pipeline(c, createWriteStream(tmp, { mode: 0o644 })).then(resolve, reject);
    });
  });
  received.catch(() => undefined);
  try {
    await new Promise<void>((resolve, reject) => server.once("error", reject).listen(sock, () => resolve()));
    const { vm } = await coldBoot(cfg, rootfs, runDir, bootTimeoutMs, size, sock);
    try {
      await vm.qmp.execute("stop");
      await vm.qmp.execute("migrate", { uri: `unix:${VmProcess.pathFor("migrate.sock", sock)}` });
      const deadline = performance.now() + SNAPSHOT_SAVE_TIMEOUT_MS;
      for (;;) {
        const info = (await vm.qmp.execute("query-migrate")) as { status?: string; "error-desc"?: string };
        if (info.status === "completed") break;
        if (info.status === "failed" || info.status === "cancelled")
          throw new MicrovmError("MICROVM.SNAPSHOT_FAILED", `migrate ${info.status}: ${info["error-desc"] ?? ""}`);
        if (performance.now() > deadline) throw new MicrovmError("MICROVM.SNAPSHOT_FAILED", "snapshot save timed out");
        await sleep(20);
      }
    } finally {
      await vm.kill();
    }
    // QEMU closes the stream when migration completes; the file is whole once the pipeline ends.
    await received;
    await rename(tmp, file);
  } finally {
    server.close();
    await rm(tmp, { force: true });
    await rm(runDir, { recursive: true, force: true });
  }
}
