// One running VM: its QEMU and that QEMU's network helper, each jailed (qemu-jail.ts), the four
// virtio-serial ports, QMP and the console as socket pairs handed to QEMU at spawn (nothing the
// guest writes early is lost, and QEMU opens no host path for them), and its egress socket. Killing
// QEMU is the hard stop for everything inside the VM.
import { spawn, type ChildProcess } from "node:child_process";
import { createWriteStream } from "node:fs";
import { chown, mkdir, open, writeFile } from "node:fs/promises";
import type net from "node:net";
import path from "node:path";
import { VmEgress } from "./egress-relay.ts";
import { MicrovmError } from "./microvm-errors.ts";
import { FD, netHelperArgs, PORTS, qemuArgs, type Accel, type EgressRelay, type PortName } from "./qemu-command.ts";
import {
  allocateJailIds,
  JAIL_ENV,
  jailedArgv,
  pathInJail,
  qemuJailed,
  releaseJailIds,
  type JailIds,
} from "./qemu-jail.ts";
import { QmpClient } from "./qmp-client.ts";
import { WORK_DISK_NAME } from "../work-disk.ts";
import { CtlChannel } from "./ctl-channel.ts";

const CONNECT_TIMEOUT_MS = 30_000;
/** The console log is for diagnosis; a guest that floods its console stops being recorded here. */
const CONSOLE_MAX_BYTES = 1024 * 1024;

export interface VmLaunch {
  accel: Accel;
  /** Host paths. */
  vmlinuz: string;
  initramfs: string;
  rootfs: string;
  runDir: string;
  tscKhz: number | null;
  egressRelay: Omit<EgressRelay, "socket">;
  /** Restore this warm-pool snapshot (host path) instead of booting. */
  incomingSnapshot?: string;
  /** A unix socket (host path) the agent listens on, made reachable to QEMU as `migrate.sock`. */
  migrateSocket?: string;
  resources: { vcpus: number; memoryMiB: number };
  /** The sandbox's work disk (host path), given to a jailed QEMU's uid. */
  workDisk: string;
}

/** The egress socket in a run directory. */
const egressSocketOf = (runDir: string) => path.join(runDir, "egress.sock");
/** Empty mount points for the jails' views (mounted on only inside each QEMU's namespace). */
const viewDirs = (runDir: string) => ({ vm: path.join(runDir, "view-vm"), net: path.join(runDir, "view-net") });

export class VmProcess {
  readonly exited: Promise<number | null>;
  private exitCode: number | null | undefined = undefined;
  readonly ctl: CtlChannel;

  private constructor(
    private readonly child: ChildProcess,
    private readonly helper: ChildProcess,
    private readonly helperExited: Promise<unknown>,
    readonly sockets: Record<PortName, net.Socket>,
    readonly qmp: QmpClient,
    exited: Promise<number | null>,
    readonly egress: VmEgress,
    private readonly ids: JailIds | null,
    readonly stderrText: () => string,
  ) {
    this.exited = exited;
    void exited.then((c) => (this.exitCode = c));
    this.ctl = new CtlChannel(sockets.ctl);
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get alive(): boolean {
    return this.exitCode === undefined;
  }

  /** Where a file given to QEMU as `name` appears to it. */
  static pathFor(name: string, hostPath: string): string {
    return pathInJail(name, hostPath);
  }

  static async start(qemuPath: string, launch: VmLaunch): Promise<VmProcess> {
    const ids = qemuJailed ? allocateJailIds() : null;
    const { runDir } = launch;
    const egress = await VmEgress.listen(egressSocketOf(runDir), ids?.net ?? null).catch((err: unknown) => {
      if (ids) releaseJailIds(ids);
      throw err;
    });
    const undo = (err: unknown) => {
      egress.close();
      if (ids) releaseJailIds(ids);
      throw err;
    };
    if (ids) for (const v of Object.values(viewDirs(runDir))) await mkdir(v, { mode: 0o700 }).catch(undo);
    if (ids && launch.migrateSocket) await chown(launch.migrateSocket, ids.vm, ids.vm).catch(undo);
    if (ids) await chown(launch.workDisk, ids.vm, ids.vm).catch(undo);
    const snapshot = launch.incomingSnapshot ? await open(launch.incomingSnapshot, "r").catch(undo) : null;
    const { child, helper } = spawnPair(qemuPath, launch, ids, egress, snapshot?.fd ?? null);
    const fdOf = (n: number) => child.stdio[n] as net.Socket;
    await snapshot?.close();
    const { note, stderrText } = watchStderr(child, helper);
    const exitOf = (c: ChildProcess) =>
      new Promise<number | null>((resolve) => {
        c.once("exit", (code) => resolve(code));
        c.once("error", (err) => (note(c, String(err)), resolve(null)));
      });
    const helperExited = exitOf(helper);
    // The helper serves only this VM: it goes when the VM goes.
    const exited = exitOf(child).then((code) => {
      helper.kill("SIGKILL");
      return code;
    });
    keepConsole(fdOf(FD.console), path.join(runDir, "console.log"));
    // For the leftover sweep: the exec chain keeps the first process's pid, so these are QEMU's.
    await writeFile(path.join(runDir, "qemu.pid"), `${child.pid ?? ""}\n`);
    await writeFile(path.join(runDir, "net.pid"), `${helper.pid ?? ""}\n`);
    const sockets = Object.fromEntries(PORTS.map((p) => [p, fdOf(FD[p])])) as Record<PortName, net.Socket>;
    try {
      const failed = exited.then(() => {
        throw new MicrovmError("MICROVM.BOOT_FAILED", `qemu exited at start: ${stderrText().trim().slice(0, 500)}`);
      });
      const qmp = await Promise.race([QmpClient.over(fdOf(FD.qmp), CONNECT_TIMEOUT_MS), failed]);
      return new VmProcess(child, helper, helperExited, sockets, qmp, exited, egress, ids, stderrText);
    } catch (err) {
      child.kill("SIGKILL");
      helper.kill("SIGKILL");
      await Promise.all([exited, helperExited]);
      egress.close();
      if (ids) releaseJailIds(ids);
      throw err;
    }
  }

  /** SIGKILL QEMU and its helper and wait until they are gone (the guest dies with them). */
  async kill(): Promise<void> {
    if (this.alive) this.child.kill("SIGKILL");
    this.helper.kill("SIGKILL");
    await Promise.all([this.exited, this.helperExited]);
    this.qmp.close();
    this.egress.close();
    for (const s of Object.values(this.sockets)) s.destroy();
    if (this.ids) releaseJailIds(this.ids);
  }
}

/**
 * Spawns the network helper and the VM's QEMU, each through its jail, joined by one socket pair.
 * Both spawns and the destroy at the end happen in one tick: the agent's copy of the link never
 * reads a frame meant for the VM.
 */
function spawnPair(
  qemuPath: string,
  launch: VmLaunch,
  ids: JailIds | null,
  egress: VmEgress,
  snapshotFd: number | null,
): { child: ChildProcess; helper: ChildProcess } {
  const { runDir } = launch;
  const views = viewDirs(runDir);
  const relay: EgressRelay = {
    perl: launch.egressRelay.perl,
    script: pathInJail("relay.pl", launch.egressRelay.script),
    socket: pathInJail("egress.sock", egress.socketPath),
  };
  const vmFiles: Record<string, string> = {
    vmlinuz: launch.vmlinuz,
    initramfs: launch.initramfs,
    rootfs: launch.rootfs,
    [WORK_DISK_NAME]: launch.workDisk,
    ...(launch.migrateSocket ? { "migrate.sock": launch.migrateSocket } : {}),
  };
  const vmArgs = qemuArgs({
    accel: launch.accel,
    tscKhz: launch.tscKhz,
    runDir,
    vmlinuz: pathInJail("vmlinuz", launch.vmlinuz),
    initramfs: pathInJail("initramfs", launch.initramfs),
    rootfs: pathInJail("rootfs", launch.rootfs),
    ...(snapshotFd !== null ? { incomingSnapshot: true } : {}),
    resources: launch.resources,
    workDisk: pathInJail(WORK_DISK_NAME, launch.workDisk),
  });
  // Own process groups: a Ctrl-C on the agent's terminal must not kill VMs mid-job behind its
  // back. Fixed environment and cwd: the wrapper chain runs as root before the jail exists.
  const opts = { detached: true, env: { ...JAIL_ENV }, cwd: "/" };
  const [hFile, ...hArgs] = jailedArgv(qemuPath, netHelperArgs(relay, runDir), {
    viewDir: views.net,
    uid: ids?.net ?? 0,
    files: { "relay.pl": launch.egressRelay.script, "egress.sock": egress.socketPath },
    kvm: false,
  });
  // Both spawns and the destroy below happen in one tick: the agent's copy of the link never
  // reads a frame meant for the VM.
  const helper = spawn(hFile!, hArgs, { ...opts, stdio: ["ignore", "ignore", "pipe", "pipe"] });
  const link = helper.stdio[FD.net] as net.Socket | null;
  const [file, ...args] = jailedArgv(qemuPath, vmArgs, {
    viewDir: views.vm,
    uid: ids?.vm ?? 0,
    files: vmFiles,
    kvm: launch.accel === "kvm",
  });
  const stdio = ["ignore", "ignore", "pipe", link ?? "ignore", ...PORTS.map(() => "pipe"), "pipe", "pipe"];
  if (snapshotFd !== null) stdio.push(snapshotFd as never);
  const child: ChildProcess = spawn(file!, args, { ...opts, stdio: stdio as never });
  link?.destroy();
  return { child, helper };
}

function watchStderr(child: ChildProcess, helper: ChildProcess) {
  const errs = new Map<ChildProcess, string>([
    [child, ""],
    [helper, ""],
  ]);
  const note = (c: ChildProcess, s: string) => errs.set(c, `${errs.get(c) ?? ""}${s}`.slice(-4000));
  for (const c of [child, helper]) c.stderr?.setEncoding("utf8").on("data", (s: string) => note(c, s));
  const stderrText = () => {
    const net = (errs.get(helper) ?? "").replace(/^.*hub 0 with no nics\s*$/m, "").trim();
    return `${errs.get(child) ?? ""}${net ? `\n(network helper: ${net})` : ""}`;
  };
  return { note, stderrText };
}

function keepConsole(source: net.Socket, file: string): void {
  const out = createWriteStream(file, { flags: "a", mode: 0o600 });
  let written = 0;
  source.on("data", (c: Buffer) => {
    if (written >= CONSOLE_MAX_BYTES) return;
    written += c.length;
    out.write(c);
  });
  source.on("error", () => undefined);
  source.once("close", () => out.end());
  out.on("error", () => undefined);
}
