// The QEMU command lines for one sandbox (feasibility Part B): microvm machine with the job size's
// vCPUs and RAM, the root image read-only on virtio-blk, the job's work disk on a second one, four virtio-serial ports and QMP on socket pairs whose
// other ends the agent holds, the kernel console to the agent, and a network link to the VM's
// network helper, a restricted user-mode network whose only way out is the agent's egress proxy
// (docs/adr/0013-mediated-egress.md). Both run under QEMU's seccomp sandbox (qemu-jail.ts for the rest).

export type Accel = "kvm" | "tcg";

/** Port names, in the order the guest agent opens them. Device ids stay fixed: snapshots depend on them. */
export const PORTS = ["ctl", "stdout", "stderr", "data"] as const;
export type PortName = (typeof PORTS)[number];

export interface QemuLaunch {
  accel: Accel;
  /** Paths as QEMU sees them (inside its view when jailed: qemu-jail.ts). */
  vmlinuz: string;
  initramfs: string;
  rootfs: string;
  /** Per-sandbox host directory; its path names the QEMU process (leftover sweep, tests). */
  runDir: string;
  tscKhz: number | null;
  /** Restore a warm-pool snapshot (streamed on fd FD.incoming) instead of booting. */
  incomingSnapshot?: boolean;
  /** vCPUs and memory of the job's size (ADR 0041). */
  resources: { vcpus: number; memoryMiB: number };
  /** The sandbox's work disk (work-disk.ts), writable, as QEMU sees it. */
  workDisk: string;
}

/**
 * The file descriptors the agent hands QEMU at spawn (socket pairs, or the snapshot file): QEMU
 * opens no path of the host for them, so a jailed QEMU needs no run directory in its view.
 */
export const FD = { net: 3, ctl: 4, stdout: 5, stderr: 6, data: 7, qmp: 8, console: 9, incoming: 10 } as const;

/**
 * seccomp for every QEMU (QEMU's own filter, `-sandbox`): no obsolete syscalls, no set*id calls,
 * no sched/priority changes. The VM's QEMU may not fork or exec either. Its network helper must
 * (the per-connection egress relay), and libslirp's child calls setsid(), which the set*id filter
 * kills (SIGSYS; `elevateprivileges=children` keeps that filter too), so the helper allows those
 * calls: it runs as an unprivileged uid without capabilities under no_new_privs (qemu-jail.ts),
 * where they can gain nothing.
 */
export const SANDBOX_VM = "on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny";
const SANDBOX_NET_HELPER = "on,obsolete=deny,elevateprivileges=allow,resourcecontrol=deny";

/** What the guest dials for its proxy; the guest's HTTP(S)_PROXY points here. */
const GUEST_PROXY = { address: "10.0.2.100", port: 3128 } as const;
export const GUEST_PROXY_URL = `http://${GUEST_PROXY.address}:${GUEST_PROXY.port}`;

/** The process name (`-name`): the run directory, so /proc tells which VM a QEMU belongs to. */
function nameArg(runDir: string, suffix = ""): string {
  return `guest=${runDir.replaceAll(",", ",,")}${suffix}`;
}

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
  // No init_on_free: it zeroes every page the kernel frees, all of RAM included at boot, which made
  // a 2 GiB guest's TCG boot ~2x slower (ADR 0041). Its gain was a smaller warm-pool snapshot
  // (feasibility: 89 -> 56 MB, ~35 ms per restore); each VM is single-use, so no job reads another's pages.
];

export function qemuArgs(l: QemuLaunch): string[] {
  // Without tsc_early_khz, about 2% of TCG boots hung in calibration (feasibility: 4 in ~190).
  const append = [...(l.tscKhz ? [`tsc_early_khz=${l.tscKhz}`] : []), ...KERNEL_ARGS].join(" ");
  const args = [
    "-name",
    nameArg(l.runDir),
    "-sandbox",
    SANDBOX_VM,
    "-M",
    `microvm,accel=${l.accel},acpi=on,pic=on,pit=on,rtc=on,isa-serial=on,x-option-roms=off`,
    "-cpu",
    "max",
    "-smp",
    String(l.resources.vcpus),
    "-m",
    `${l.resources.memoryMiB}M`,
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
    // The console goes to the agent, which keeps it as console.log in the run directory.
    "-chardev",
    `socket,id=con,fd=${FD.console}`,
    "-serial",
    "chardev:con",
    "-drive",
    `id=root,file=${l.rootfs},format=raw,if=none,readonly=on`,
    "-device",
    "virtio-blk-device,drive=root",
    // Second: the guest sees it as /dev/vdb. Unsafe cache: the disk dies with the VM, so flushes
    // buy nothing but host I/O.
    "-drive",
    `id=work,file=${l.workDisk},format=raw,if=none,cache=unsafe,discard=unmap`,
    "-device",
    "virtio-blk-device,drive=work",
    "-device",
    "virtio-serial-device,max_ports=5",
  ];
  // virtserialport, not virtconsole: no tty layer in the guest, so output is binary-safe without
  // termios games, and explicit nr keeps the ports identical between snapshot and restore.
  PORTS.forEach((port, i) => {
    args.push("-chardev", `socket,id=${port},fd=${FD[port]}`);
    args.push("-device", `virtserialport,chardev=${port},name=${port},nr=${i + 1}`);
  });
  args.push("-netdev", `socket,id=n0,fd=${FD.net}`, ...NET_DEVICE);
  args.push("-chardev", `socket,id=qmp,fd=${FD.qmp}`, "-mon", "chardev=qmp,mode=control");
  if (l.incomingSnapshot) args.push("-incoming", `fd:${FD.incoming}`);
  return args;
}

/** The VM's network device: part of the device model, hence of the snapshot key. */
export const NET_DEVICE = ["-device", "virtio-net-device,netdev=n0"] as const;

export interface EgressRelay {
  perl: string;
  script: string;
  /** The VM's egress socket, which the agent serves (egress-relay.ts). */
  socket: string;
}

/**
 * The VM's network helper: a second QEMU with no machine (`-M none`: no CPU, no devices), whose
 * only job is the user-mode network. Its one link is the socket pair on fd FD.net, whose other end
 * is the VM's virtio-net backend (Ethernet frames in QEMU's own framing), joined to the user-mode
 * network through an emulated hub.
 *
 * Why a second process: the guest's one way out needs a host connection per guest connection with
 * closes passed both ways, which QEMU 7.2 offers only as a `cmd:` guestfwd (libslirp runs the relay
 * once per connection). A chardev guestfwd is one host connection opened when QEMU starts, shared
 * by every guest connection and never closed towards the guest (the feasibility pitfall). Spawning
 * needs fork and exec, which the VM's QEMU, the one emulating devices, is denied (`spawn=deny`);
 * the helper emulates nothing but the network and keeps spawn, in its own jail under another uid.
 *
 * The network is user-mode with `restrict=on` (the guest reaches neither the host nor anything
 * beyond it: feasibility Part B, where an unrestricted guest reached every host loopback service
 * through 10.0.2.2) and exactly one guestfwd. libslirp splits the command on spaces and QEMU's
 * option parser on commas; paths with either are refused rather than quoted.
 */
export function netHelperArgs(relay: EgressRelay, runDir: string): string[] {
  const parts = [relay.perl, relay.script, relay.socket];
  for (const p of parts) {
    if (/[\s,]/.test(p))
      throw new Error(`path ${JSON.stringify(p)} contains a space or comma (QEMU guestfwd cannot carry it)`);
  }
  const fwd = `guestfwd=tcp:${GUEST_PROXY.address}:${GUEST_PROXY.port}-cmd:${parts.join(" ")}`;
  return [
    "-name",
    nameArg(runDir, "-net"),
    "-sandbox",
    SANDBOX_NET_HELPER,
    "-M",
    "none",
    "-nodefaults",
    "-no-user-config",
    "-display",
    "none",
    "-netdev",
    `user,id=u0,restrict=on,ipv6=off,net=10.0.2.0/24,${fwd}`,
    "-netdev",
    `socket,id=s0,fd=${FD.net}`,
    "-netdev",
    "hubport,id=h0,hubid=0,netdev=u0",
    "-netdev",
    "hubport,id=h1,hubid=0,netdev=s0",
  ];
}

/** Host TSC rate from /proc/cpuinfo ("cpu MHz"), in kHz; under TCG the guest TSC runs at it. */
export function tscKhzFromCpuinfo(cpuinfo: string): number | null {
  const m = /^cpu MHz\s*:\s*([\d.]+)/m.exec(cpuinfo);
  return m ? Math.round(Number(m[1]) * 1000) : null;
}
