// The three ways a VM comes to life: a cold boot to the agent's READY, a restore of the warm-pool
// snapshot (paused until QMP `cont`, then PING/PONG proves the agent answers), and the one-off
// boot that saves that snapshot. Each VM gets its own run directory, marked as ours.
import { randomBytes } from "node:crypto";
import { mkdir, rename, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { sleep } from "../../timing.ts";
import { MicrovmError } from "./microvm-errors.ts";
import type { Accel, EgressRelay } from "./qemu-command.ts";
import { VmProcess } from "./vm-process.ts";

/** Marks a run directory as created by this driver, so leftover cleanup never deletes anything else. */
export const RUN_DIR_MARKER = ".kiln-microvm";
const SNAPSHOT_SAVE_TIMEOUT_MS = 120_000;

export interface BootConfig {
  qemuPath: string;
  accel: Accel;
  tscKhz: number | null;
  vmlinuz: string;
  initramfs: string;
  egressRelay: EgressRelay;
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
  resources?: { vcpus: number; memoryMiB: number },
): Promise<BootedVm> {
  const started = performance.now();
  const vm = await VmProcess.start(cfg.qemuPath, { ...cfg, rootfs, runDir, ...(resources ? { resources } : {}) });
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
): Promise<BootedVm> {
  const started = performance.now();
  const vm = await VmProcess.start(cfg.qemuPath, { ...cfg, rootfs, runDir, incomingSnapshot: snapshot });
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
    await vm.kill();
    throw err;
  }
  return { vm, runDir, bootMs: performance.now() - started };
}

/** Boots the base image once, waits until the agent is idle, and saves its RAM and device state. */
export async function saveSnapshot(
  cfg: BootConfig,
  rootfs: string,
  workDir: string,
  file: string,
  bootTimeoutMs: number,
): Promise<void> {
  const runDir = await newRunDir(workDir);
  const tmp = `${file}.${randomBytes(4).toString("hex")}.tmp`;
  try {
    const { vm } = await coldBoot(cfg, rootfs, runDir, bootTimeoutMs);
    try {
      await vm.qmp.execute("stop");
      await vm.qmp.execute("migrate", { uri: `exec:cat > '${tmp.replaceAll("'", "")}'` });
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
    await rename(tmp, file);
  } finally {
    await rm(tmp, { force: true });
    await rm(runDir, { recursive: true, force: true });
  }
}
