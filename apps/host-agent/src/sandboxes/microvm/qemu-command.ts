// The QEMU command line for one sandbox (feasibility Part B): microvm machine, one vCPU, fixed RAM,
// the root image read-only on virtio-blk, four virtio-serial ports whose host ends are unix sockets
// the agent listens on, the kernel console to a file, and one restricted user-mode network whose
// only way out is the agent's egress proxy (docs/adr/0013-mediated-egress.md).
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
  /** The per-connection relay QEMU runs for the guest's proxy address (egress-relay.ts). */
  egressRelay: EgressRelay;
  /** vCPUs and memory of the job's size; absent: VM_CPUS and VM_MEMORY (small, the warm pool's). */
  resources?: { vcpus: number; memoryMiB: number };
}

export interface EgressRelay {
  perl: string;
  script: string;
}

/** What the guest dials for its proxy; the guest's HTTP(S)_PROXY points here. */
const GUEST_PROXY = { address: "10.0.2.100", port: 3128 } as const;
export const GUEST_PROXY_URL = `http://${GUEST_PROXY.address}:${GUEST_PROXY.port}`;
/** Per-VM: the relay connects here; the driver points it at the attempt's egress socket at create(). */
export const egressSocketLink = (runDir: string) => path.join(runDir, "egress.sock");

export const socketPath = (runDir: string, port: PortName | "qmp") => path.join(runDir, `${port}.sock`);

const KERNEL_ARGS = [
  "console=ttyS0",
  "quiet",
  "loglevel=1",
  "reboot=t",
  "panic=-1",
  "i8042.noaux",
  "i8042.nomux",
  "i8042.nopnp",
  "i8042.dumbkbd",
  "tsc=reliable",
  "no_timer_check",
  "cryptomgr.notests",
  "random.trust_cpu=on",
  // Freed pages are zeroed: smaller snapshots (feasibility: 89 -> 56 MB, ~35 ms per restore).
  "init_on_free=1",
];

export function qemuArgs(l: QemuLaunch): string[] {
  // Without tsc_early_khz, about 2% of TCG boots hung in calibration (feasibility: 4 in ~190).
  const append = [...(l.tscKhz ? [`tsc_early_khz=${l.tscKhz}`] : []), ...KERNEL_ARGS].join(" ");
  const args = [
    "-M",
    `microvm,accel=${l.accel},acpi=on,pic=on,pit=on,rtc=on,isa-serial=on,x-option-roms=off`,
    "-cpu",
    "max",
    "-smp",
    String(l.resources?.vcpus ?? VM_CPUS),
    "-m",
    l.resources ? `${l.resources.memoryMiB}M` : VM_MEMORY,
    "-nodefaults",
    "-no-user-config",
    "-display",
    "none",
    "-no-reboot",
    "-kernel",
    l.vmlinuz,
    "-initrd",
    l.initramfs,
    "-append",
    append,
    "-serial",
    `file:${path.join(l.runDir, "console.log")}`,
    "-drive",
    `id=root,file=${l.rootfs},format=raw,if=none,readonly=on`,
    "-device",
    "virtio-blk-device,drive=root",
    "-device",
    "virtio-serial-device,max_ports=5",
  ];
  // virtserialport, not virtconsole: no tty layer in the guest, so output is binary-safe without
  // termios games, and explicit nr keeps the ports identical between snapshot and restore.
  PORTS.forEach((port, i) => {
    args.push("-chardev", `socket,id=${port},path=${socketPath(l.runDir, port)}`);
    args.push("-device", `virtserialport,chardev=${port},name=${port},nr=${i + 1}`);
  });
  args.push(...egressNetdevArgs(l.egressRelay, l.runDir));
  args.push("-qmp", `unix:${socketPath(l.runDir, "qmp")},server=on,wait=off`);
  args.push("-pidfile", path.join(l.runDir, "qemu.pid"));
  if (l.incomingSnapshot) args.push("-incoming", `exec:cat ${shellQuote(l.incomingSnapshot)}`);
  return args;
}

/**
 * The only network a sandbox gets: user-mode networking with `restrict=on` (the guest reaches
 * neither the host nor anything beyond it: feasibility Part B, where an unrestricted guest reached
 * every host loopback service through 10.0.2.2) and exactly one guestfwd.
 *
 * The guestfwd is `cmd:`, not a `tcp:` chardev: a chardev is one host connection opened when QEMU
 * starts and shared by every guest connection, which never sees a close (the feasibility pitfall)
 * and would need the attempt's port before a warm-pool VM has an attempt. `cmd:` runs the relay
 * once per guest connection with the connection on its stdin/stdout, so closes pass both ways, and
 * the relay resolves the VM's egress link only when the guest dials: a pooled VM is restored before
 * any claim and gets its attempt's listener at create() by that link (egress-relay.ts).
 *
 * libslirp splits the command on spaces and QEMU's option parser on commas; paths with either are
 * refused rather than quoted.
 */
export function egressNetdevArgs(relay: EgressRelay, runDir: string): string[] {
  const parts = [relay.perl, relay.script, egressSocketLink(runDir)];
  for (const p of parts) {
    if (/[\s,]/.test(p))
      throw new Error(`path ${JSON.stringify(p)} contains a space or comma (QEMU guestfwd cannot carry it)`);
  }
  const fwd = `guestfwd=tcp:${GUEST_PROXY.address}:${GUEST_PROXY.port}-cmd:${parts.join(" ")}`;
  return [
    "-netdev",
    `user,id=n0,restrict=on,ipv6=off,net=10.0.2.0/24,${fwd}`,
    "-device",
    "virtio-net-device,netdev=n0",
  ];
}

function shellQuote(s: string): string {
  return `'${s.replaceAll("'", `'\\''`)}'`;
}

/** Host TSC rate from /proc/cpuinfo ("cpu MHz"), in kHz; under TCG the guest TSC runs at it. */
export function tscKhzFromCpuinfo(cpuinfo: string): number | null {
  const m = /^cpu MHz\s*:\s*([\d.]+)/m.exec(cpuinfo);
  return m ? Math.round(Number(m[1]) * 1000) : null;
}
