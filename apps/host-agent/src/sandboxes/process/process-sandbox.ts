// One attempt's sandbox for the process driver: a directory with workspace/home/tmp, steps as
// host processes in their own process group and, when the host allows it, their own
// user/pid/net/ipc/uts/mount namespaces, an unprivileged uid and a private root (private-view.ts).
import { spawn } from "node:child_process";
import { once } from "node:events";
import path from "node:path";
import type { Readable, Writable } from "node:stream";
import type { SandboxLimit } from "@kiln/domain";
import type { OutputListener, Sandbox, SandboxPaths, StepOptions, StepResult } from "../sandbox-driver.ts";
import { monotonicNow, sleep } from "../../timing.ts";
import { egressProxyEnv, egressSocketFor } from "../../egress/index.ts";
import { SANDBOX_PROXY_URL, type ForwarderTools } from "./egress-forwarder.ts";
import { NetHolder } from "./net-holder.ts";
import {
  DEFAULT_SANDBOX_LIMITS,
  EGRESS_SOCKET_IN_ROOT,
  privateViewArgv,
  type ViewContinuation,
} from "./private-view.ts";
import { encodeStepEnv, STEP_ENV_FD, WRAPPER_ENV } from "./step-exec.ts";
import { tiedToAgent, type NamespaceSupport } from "./namespace-probe.ts";
import { killProcessesUnder } from "./process-sweep.ts";
import { removeTree } from "./remove-tree.ts";
import type { SandboxCgroup } from "./sandbox-cgroup.ts";
import type { SandboxDisk } from "./sandbox-disk.ts";

export interface SizeLimits {
  cgroup: SandboxCgroup | null;
  disk: SandboxDisk | null;
}

// After the step's shell exits we kill its group; an escaped writer (setsid) could still hold the
// pipes open. Past this grace the pipes are closed from our side so the step always returns.
const PIPE_CLOSE_GRACE_MS = 2_000;
// destroy() waits this long for a SIGKILLed step to be reaped before removing its files.
const REAP_WAIT_MS = 5_000;

interface RunningStep {
  pid: number;
  done: Promise<unknown>;
}

export class ProcessSandbox implements Sandbox {
  readonly paths: SandboxPaths;
  readonly hostWorkspaceDir: string;
  /** The work disk's own root when there is one (the workspace is bound from it), else the sandbox root. */
  readonly hostScratchDir: string;
  private running: RunningStep | null = null;
  private destroying: Promise<void> | null = null;
  private warnedNoForwarder = false;
  private holder: NetHolder | null = null;
  private holderStarting: Promise<NetHolder> | null = null;

  constructor(
    readonly id: string,
    private readonly root: string,
    private readonly namespaces: NamespaceSupport,
    /** The egress forwarder's interpreter (perl); null when the host lacks it (see egress-forwarder.ts). */
    private readonly forwarder: ForwarderTools | { missing: string[] } | null = null,
    /** The size's limits (ADR 0041): the attempt's cgroup and work disk, where the host offers them. */
    private readonly limits: SizeLimits = { cgroup: null, disk: null },
    /** The job image's unpacked rootfs the step's root is built from; null: the host's view. */
    private readonly imageRoot: string | null = null,
  ) {
    this.paths = {
      workspace: path.join(root, "workspace"),
      home: path.join(root, "home"),
      tmp: path.join(root, "tmp"),
    };
    this.hostWorkspaceDir = this.paths.workspace;
    this.hostScratchDir = limits.disk?.mountPoint ?? root;
  }

  get isolation() {
    return this.namespaces.isolation;
  }

  /**
   * Starts the network-namespace holder now, while the agent checks the source out, instead of at
   * the first step: a perl start-up less between claim and first step. Only for the root agent's
   * held-namespace mode; a failure here is retried at the first step.
   */
  prestart(): void {
    const socket = egressSocketFor(this.id);
    const ns = this.namespaces;
    const tools = this.forwarder;
    if (!socket || !ns.available || !tools || "missing" in tools || ns.args.includes("--user") || !tools.nsenter)
      return;
    const starting = NetHolder.start(ns.unsharePath, tools, socket.path);
    this.holderStarting = starting;
    starting
      .then(
        (h) => {
          if (this.destroying) h.stop();
          else this.holder ??= h;
        },
        () => undefined,
      )
      .finally(() => {
        if (this.holderStarting === starting) this.holderStarting = null;
      });
  }

  async runStep(
    command: string,
    env: Record<string, string>,
    opts: StepOptions,
    onStdout: OutputListener,
    onStderr: OutputListener,
  ): Promise<StepResult> {
    if (this.destroying) throw new Error(`sandbox ${this.id} is destroyed`);
    if (this.running) throw new Error(`sandbox ${this.id} is already running a step`);
    const cwd = this.resolveWorkingDirectory(opts.workingDirectory);
    const egress = await this.egressFor(cwd, command, onStderr);
    // The proxy variables win over the job's own: there is no other way out to point them at.
    const stepEnv = egress ? { ...env, ...egressProxyEnv(SANDBOX_PROXY_URL) } : env;
    const namespaced = this.namespaces.available;
    const [bareFile, bareArgs] = egress
      ? egress
      : namespaced
        ? tiedToAgent(this.namespaces.deathSignal, this.namespaces.unsharePath, [
            ...this.namespaces.args,
            "--",
            ...this.privateView(null, { cwd, command }),
          ])
        : ["/bin/sh", ["-c", command]];
    const [file, args] = this.limits.cgroup ? this.limits.cgroup.wrap(bareFile, bareArgs) : [bareFile, bareArgs];
    await this.limits.cgroup?.mark();
    const startedAt = monotonicNow();
    // detached: own process group (and session), so kill(-pid) reaches the whole tree and a
    // terminal's Ctrl-C on the agent does not hit the step. Nothing of the agent's own environment
    // (its tokens included) is inherited. Namespaced, the wrapper chain (setpriv, nsenter, unshare,
    // perl: host root until the view drops it) gets WRAPPER_ENV and cwd "/", and the step's own
    // variables go down fd 3 to the step's final exec (step-exec.ts, issue 28): a job's LD_PRELOAD
    // or PERL5OPT never reaches a privileged process. Without namespaces (isolation "none", a
    // development-only mode the agent must be told to accept) the step is that plain process.
    const child = spawn(file, args, {
      cwd: namespaced ? "/" : cwd,
      env: namespaced ? WRAPPER_ENV : stepEnv,
      detached: true,
      stdio: ["ignore", "pipe", "pipe", "pipe"],
    });
    sendStepEnv(child.stdio[STEP_ENV_FD], namespaced ? stepEnv : null);
    const { stdout, stderr } = child;
    if (!stdout || !stderr) throw new Error("spawn returned no output pipes");
    stdout.on("data", onStdout);
    stderr.on("data", onStderr);
    const pipesClosed = Promise.all([once(stdout, "close"), once(stderr, "close")]);
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve, reject) => {
      child.once("error", reject); // spawn failure (missing binary, bad cwd)
      child.once("exit", (code, signal) => resolve({ code, signal }));
    });
    const done = this.finishStep(child.pid, exited, pipesClosed, () => {
      stdout.destroy();
      stderr.destroy();
    });
    if (child.pid !== undefined) this.running = { pid: child.pid, done: done.catch(() => undefined) };
    try {
      const { code, signal } = await done;
      const limit = code === 0 && signal === null ? null : await this.limitHit();
      return { exitCode: code, signal, limit, durationMs: monotonicNow() - startedAt };
    } finally {
      this.running = null;
    }
  }

  /**
   * How to run the step behind the egress forwarder when this attempt has an egress listener and
   * the step gets its own network namespace; null otherwise (no listener: no way out at all; no
   * namespaces: the step shares the host's network and nothing can be mediated, see the README).
   * A root agent enters the sandbox's held namespace (net-holder.ts); an unprivileged one starts
   * the forwarder inside each step's new namespace.
   */
  private async egressFor(cwd: string, command: string, onStderr: OutputListener): Promise<[string, string[]] | null> {
    const socket = egressSocketFor(this.id);
    const ns = this.namespaces;
    if (!socket || !ns.available) return null;
    const tools = this.forwarder;
    if (!tools || "missing" in tools) {
      // Fail closed but say so: the step keeps its empty network namespace (no way out at all).
      const missing = tools ? tools.missing.join(", ") : "perl";
      if (!this.warnedNoForwarder)
        onStderr(
          Buffer.from(
            `kiln egress: this host cannot mediate egress (missing ${missing}; Debian: apt-get install perl-base), so this step has no network\n`,
          ),
        );
      this.warnedNoForwarder = true;
      return null;
    }
    if (ns.args.includes("--user") || !tools.nsenter) {
      // The forwarder runs inside the step's mount namespace, where the work dir (and the socket in
      // it) is hidden: it dials the socket's bind inside the sandbox root instead.
      const inRoot = path.join(this.root, EGRESS_SOCKET_IN_ROOT);
      return tiedToAgent(ns.deathSignal, ns.unsharePath, [
        ...ns.args,
        "--",
        ...this.privateView(socket.path, { cwd, command, forwardTo: inRoot }),
      ]);
    }
    if (!this.holder?.alive && this.holderStarting) await this.holderStarting.catch(() => undefined);
    if (!this.holder?.alive) this.holder = await NetHolder.start(ns.unsharePath, tools, socket.path);
    const stepArgs = ns.args.filter((a) => a !== "--net");
    // nsenter execs (no fork without --pid), so setpriv's parent is still the agent.
    return [
      tools.nsenter,
      [
        `--net=${this.holder.netnsPath}`,
        "--",
        ...ns.deathSignal,
        ns.unsharePath,
        ...stepArgs,
        "--",
        ...this.privateView(null, { cwd, command }),
      ],
    ];
  }

  /** Every namespaced step sees only its own sandbox and read-only system directories (private-view.ts). */
  private privateView(egressSocket: string | null, then: ViewContinuation): string[] {
    const ns = this.namespaces;
    const tools = this.forwarder;
    // Fail closed: a namespaced step without its private view would see the whole host.
    if (!ns.available || !tools || "missing" in tools)
      throw new Error(
        "this host has namespaces but no perl (Debian: perl-base) to set up the sandbox's filesystem view",
      );
    return privateViewArgv(
      {
        root: this.root,
        workDir: path.dirname(this.root),
        egressSocket,
        mapIds: ns.mapIds,
        limits: DEFAULT_SANDBOX_LIMITS,
        perl: tools.perl,
        imageRoot: this.imageRoot,
      },
      then,
    );
  }

  kill(signal: NodeJS.Signals): void {
    if (this.running) killGroup(this.running.pid, signal);
  }

  destroy(): Promise<void> {
    this.destroying ??= this.teardown();
    return this.destroying;
  }

  private async finishStep(
    pid: number | undefined,
    exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>,
    pipesClosed: Promise<unknown>,
    closePipes: () => void,
  ): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    try {
      const result = await exited;
      // Nothing a step started may outlive it: background jobs would otherwise keep running into
      // the next step (or the next job) and hold the output pipes open forever. With a pid
      // namespace the kernel already did this when the step's pid 1 exited.
      if (pid !== undefined) killGroup(pid, "SIGKILL");
      await killProcessesUnder(this.root);
      await Promise.race([pipesClosed, sleep(PIPE_CLOSE_GRACE_MS)]);
      return result;
    } finally {
      closePipes();
    }
  }

  private async teardown(): Promise<void> {
    const running = this.running;
    if (running) {
      killGroup(running.pid, "SIGKILL");
      await Promise.race([running.done, sleep(REAP_WAIT_MS)]);
    }
    // A holder still starting is stopped by prestart's own continuation (destroying is set by now).
    await this.holderStarting?.catch(() => undefined);
    this.holder?.stop();
    // Also catches processes that escaped the group and a checkout still running in the workspace.
    await killProcessesUnder(this.root);
    await this.limits.cgroup?.remove();
    await this.limits.disk?.unmount();
    await removeTree(this.root);
  }

  /** Which of the size's limits a failed step ran into: the disk first (a full disk fails many ways). */
  private async limitHit(): Promise<SandboxLimit | null> {
    if (await this.limits.disk?.full()) return "disk_full";
    return (await this.limits.cgroup?.limitHit()) ?? null;
  }

  private resolveWorkingDirectory(relative: string | undefined): string {
    const workspace = this.paths.workspace;
    const cwd = path.resolve(workspace, relative ?? ".");
    if (cwd !== workspace && !cwd.startsWith(`${workspace}${path.sep}`)) {
      throw new Error(`working directory ${JSON.stringify(relative)} is outside the workspace`);
    }
    return cwd;
  }
}

/**
 * Hands the step's environment to its final exec over fd 3. A step whose chain dies before reading
 * it (a spawn failure, a view error) closes the pipe: the error is the step's, reported on stderr.
 */
function sendStepEnv(pipe: Writable | Readable | null | undefined, env: Record<string, string> | null): void {
  if (!pipe || !("end" in pipe)) return;
  pipe.on("error", () => undefined);
  if (env) pipe.end(encodeStepEnv(env));
  else pipe.end();
}

function killGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // ESRCH: the group is already gone
  }
}
