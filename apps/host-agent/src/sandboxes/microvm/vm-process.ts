// One running QEMU: its four virtio-serial sockets (the host listens, QEMU connects at start, so
// nothing the guest writes early is lost), its QMP connection and its exit. Killing it is the hard
// stop for everything inside the VM.
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import net from "node:net";
import { CtlChannel } from "./ctl-channel.ts";
import { MicrovmError } from "./microvm-errors.ts";
import { PORTS, qemuArgs, socketPath, type PortName, type QemuLaunch } from "./qemu-command.ts";
import { QmpClient } from "./qmp-client.ts";

const CONNECT_TIMEOUT_MS = 30_000;
// util-linux (essential on Debian); without it VMs of a SIGKILLed agent live until removeLeftovers.
const setprivPath = existsSync("/usr/bin/setpriv") ? "/usr/bin/setpriv" : null;
// Defence in depth behind restrict=on (feasibility warning 7): QEMU itself runs in a network
// namespace of its own with nothing but a loopback, so even a slirp bug that let a guest packet out
// would reach no host service. Everything QEMU talks to is a unix socket (ports, QMP, the egress
// relay's link), which a network namespace does not cut. The loopback must be up: libslirp builds
// its guestfwd socket pairs over 127.0.0.1 TCP ("slirp_socketpair(): Network is unreachable"
// otherwise). Needs root (an unprivileged agent has no user namespace set up here).
const unsharePath =
  existsSync("/usr/bin/unshare") && existsSync("/bin/ip") && process.getuid?.() === 0 ? "/usr/bin/unshare" : null;
// QEMU is started with an empty environment: the ip path is absolute.
const IN_OWN_NETNS = '/bin/ip link set lo up && exec "$0" "$@"';

/** Whether QEMU runs in its own loopback-only network namespace (for the isolation detail). */
export const qemuInOwnNetns = unsharePath !== null;

export class VmProcess {
  readonly exited: Promise<number | null>;
  private exitCode: number | null | undefined = undefined;
  readonly ctl: CtlChannel;

  private constructor(
    private readonly child: ChildProcess,
    readonly sockets: Record<PortName, net.Socket>,
    readonly qmp: QmpClient,
    exited: Promise<number | null>,
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

  static async start(qemuPath: string, launch: QemuLaunch): Promise<VmProcess> {
    const servers = await Promise.all(PORTS.map((p) => listen(socketPath(launch.runDir, p))));
    // Own process group: a Ctrl-C on the agent's terminal must not kill VMs mid-job behind its back.
    // But a VM must not outlive its agent either (a SIGKILLed agent cannot clean up): setpriv sets
    // the parent-death signal, so the kernel SIGKILLs QEMU when the agent dies, however it dies.
    const qemu = unsharePath
      ? [unsharePath, "--net", "--", "/bin/sh", "-c", IN_OWN_NETNS, qemuPath, ...qemuArgs(launch)]
      : [qemuPath, ...qemuArgs(launch)];
    // pdeathsig survives the exec chain (setpriv -> unshare -> sh -> qemu; none is setuid).
    const [file, args] = setprivPath
      ? [setprivPath, ["--pdeathsig", "KILL", "--", ...qemu]]
      : [qemu[0]!, qemu.slice(1)];
    const child = spawn(file, args, { detached: true, stdio: ["ignore", "ignore", "pipe"], env: {} });
    let stderr = "";
    child.stderr?.setEncoding("utf8").on("data", (c: string) => (stderr = (stderr + c).slice(-4000)));
    const exited = new Promise<number | null>((resolve) => {
      child.once("exit", (code) => resolve(code));
      child.once("error", (err) => ((stderr += String(err)), resolve(null)));
    });
    let gone = false;
    void exited.then(() => (gone = true));
    try {
      const connected = Promise.all(servers.map((s) => accept(s)));
      const failed = exited.then(() => {
        throw new MicrovmError("MICROVM.BOOT_FAILED", `qemu exited at start: ${stderr.trim().slice(0, 500)}`);
      });
      const timer = new Promise<never>((_, reject) =>
        setTimeout(
          () => reject(new MicrovmError("MICROVM.BOOT_TIMEOUT", "qemu did not connect its serial ports")),
          CONNECT_TIMEOUT_MS,
        ).unref(),
      );
      const conns = await Promise.race([connected, failed, timer]);
      const sockets = Object.fromEntries(PORTS.map((p, i) => [p, conns[i]!])) as Record<PortName, net.Socket>;
      const qmp = await QmpClient.connect(socketPath(launch.runDir, "qmp"), CONNECT_TIMEOUT_MS, () => !gone);
      return new VmProcess(child, sockets, qmp, exited, () => stderr);
    } catch (err) {
      child.kill("SIGKILL");
      await exited;
      throw err;
    } finally {
      for (const s of servers) s.close();
    }
  }

  /** SIGKILL QEMU and wait until it is gone (the guest and every process in it die with it). */
  async kill(): Promise<void> {
    if (this.alive) this.child.kill("SIGKILL");
    await this.exited;
    this.qmp.close();
    for (const s of Object.values(this.sockets)) s.destroy();
  }
}

function listen(path: string): Promise<net.Server> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(path, () => resolve(server));
  });
}

function accept(server: net.Server): Promise<net.Socket> {
  return new Promise((resolve) => server.once("connection", (s: net.Socket) => resolve(s)));
}
