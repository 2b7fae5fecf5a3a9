// The QEMU command line for one sandbox (feasibility Part B): microvm machine, one vCPU, fixed RAM,
// the root image read-only on virtio-blk, four virtio-serial ports whose host ends are unix sockets
// the agent listens on, the kernel console to a file, and no network device at all.
import path from "node:path";
import { VM_CPUS, VM_MEMORY } from "./microvm-limits.ts";

export type Accel = "kvm" | "tcg";

/** Port names, in the order the guest agent opens them. Device ids stay fixed: snapshots depend on them. */
export const PORTS = ["ctl", "stdout", "stderr", "data"] as const;
export type PortName = (typeof PORTS)[number];

export interface QemuLaunch {
  accel: Accel;
  vmlinuz: string;
  initramfs: string;
  rootfs: string;
  /** Per-sandbox directory holding sockets, console log and pidfile. */
  runDir: string;
  tscKhz: number | null;
  /** Restore a warm-pool snapshot instead of booting. */
  incomingSnapshot?: string;
}

export const socketPath = (runDir: string, port: PortName | "qmp") => path.join(runDir, `${port}.sock`);

const KERNEL_ARGS = [
  "console=ttyS0", "quiet", "loglevel=1", "reboot=t", "panic=-1",
  "i8042.noaux", "i8042.nomux", "i8042.nopnp", "i8042.dumbkbd",
  "tsc=reliable", "no_timer_check", "cryptomgr.notests", "random.trust_cpu=on",
  // Freed pages are zeroed: smaller snapshots (feasibility: 89 -> 56 MB, ~35 ms per restore).
  "init_on_free=1",
];

export function qemuArgs(l: QemuLaunch): string[] {
  // Without tsc_early_khz, about 2% of TCG boots hung in calibration (feasibility: 4 in ~190).
  const append = [...(l.tscKhz ? [`tsc_early_khz=${l.tscKhz}`] : []), ...KERNEL_ARGS].join(" ");
  const args = [
    "-M", `microvm,accel=${l.accel},acpi=on,pic=on,pit=on,rtc=on,isa-serial=on,x-option-roms=off`,
    "-cpu", "max", "-smp", String(VM_CPUS), "-m", VM_MEMORY,
    "-nodefaults", "-no-user-config", "-display", "none", "-no-reboot",
    "-kernel", l.vmlinuz, "-initrd", l.initramfs, "-append", append,
    "-serial", `file:${path.join(l.runDir, "console.log")}`,
    "-drive", `id=root,file=${l.rootfs},format=raw,if=none,readonly=on`,
    "-device", "virtio-blk-device,drive=root",
    "-device", "virtio-serial-device,max_ports=5",
  ];
  // virtserialport, not virtconsole: no tty layer in the guest, so output is binary-safe without
  // termios games, and explicit nr keeps the ports identical between snapshot and restore.
  PORTS.forEach((port, i) => {
    args.push("-chardev", `socket,id=${port},path=${socketPath(l.runDir, port)}`);
    args.push("-device", `virtserialport,chardev=${port},name=${port},nr=${i + 1}`);
  });
  args.push(...egressNetdevArgs());
  args.push("-qmp", `unix:${socketPath(l.runDir, "qmp")},server=on,wait=off`);
  args.push("-pidfile", path.join(l.runDir, "qemu.pid"));
  if (l.incomingSnapshot) args.push("-incoming", `exec:cat ${shellQuote(l.incomingSnapshot)}`);
  return args;
}

/**
 * EGRESS HOOK (not wired): the only network a sandbox may ever get is user-mode networking with
 * exactly one guestfwd to the host's egress proxy, e.g.
 *   -netdev user,id=n0,restrict=on,ipv6=off,guestfwd=tcp:10.0.2.100:3128-tcp:127.0.0.1:<proxy port>
 *   -device virtio-net-device,netdev=n0
 * The egress helper owns the proxy; until it lands, sandboxes have no network device at all.
 * Adding a device changes the machine, so the warm-pool snapshot key must include it.
 */
export function egressNetdevArgs(): string[] {
  return [];
}

function shellQuote(s: string): string {
  return `'${s.replaceAll("'", `'\\''`)}'`;
}

/** Host TSC rate from /proc/cpuinfo ("cpu MHz"), in kHz; under TCG the guest TSC runs at it. */
export function tscKhzFromCpuinfo(cpuinfo: string): number | null {
  const m = /^cpu MHz\s*:\s*([\d.]+)/m.exec(cpuinfo);
  return m ? Math.round(Number(m[1]) * 1000) : null;
}
