// One job's microVM. Before the first step the guest gets the wall-clock time, fresh entropy and the
// workspace the agent checked out; then steps run one by one over the ctl port. The VM is never
// reused: destroy() kills QEMU and deletes every file of the sandbox.
import { randomBytes } from "node:crypto";
import { SANDBOX_LIMIT_CAUSES, type SandboxLimit } from "@kiln/domain";
import { constants } from "node:os";
import { rm } from "node:fs/promises";
import {
  SandboxLostError,
  type OutputListener,
  type Sandbox,
  type SandboxIsolation,
  type SandboxPaths,
  type StepOptions,
  type StepResult,
} from "../sandbox-driver.ts";
import { monotonicNow, sleep } from "../../timing.ts";
import { MicrovmError } from "./microvm-errors.ts";
import { egressProxyEnv } from "../../egress/index.ts";
import { GUEST_PATHS } from "./microvm-limits.ts";
import { GUEST_PROXY_URL } from "./qemu-command.ts";
import { guestWorkingDirectory, stepLauncher } from "./step-launcher.ts";
import type { VmProcess } from "./vm-process.ts";
import { pullWorkspace, pushWorkspace } from "./workspace-transfer.ts";

const PREP_TIMEOUT_MS = 60_000;
const START_TIMEOUT_MS = 60_000;
// A guest that ignores KILL (wedged agent) is stopped from outside: QEMU dies, the step with it.
const HARD_KILL_AFTER_MS = 3_000;
// Tar overhead over the work disk's size: anything larger is a lying guest.
const PULL_SLACK_BYTES = 64 * 1024 * 1024;

interface Streams {
  out: OutputListener;
  err: OutputListener;
  outBytes: number;
  errBytes: number;
  onProgress: () => void;
}

export class MicrovmSandbox implements Sandbox {
  readonly paths: SandboxPaths = { ...GUEST_PATHS };
  private prepared = false;
  private streams: Streams | null = null;
  private signalSent: NodeJS.Signals | null = null;
  private pendingSignal: NodeJS.Signals | null = null;
  private started = false;
  private hardKilled = false;
  private destroying: Promise<void> | null = null;

  constructor(
    readonly id: string,
    readonly isolation: SandboxIsolation,
    private readonly vm: VmProcess,
    private readonly runDir: string,
    readonly hostWorkspaceDir: string,
    private readonly hasEgress: boolean,
    private readonly diskMiB: number,
    private readonly onDestroyed: () => void,
  ) {
    // Always drained, even between steps, so the guest can never block on a full port.
    vm.sockets.stdout.on("data", (c: Buffer) => this.deliver(c, "out"));
    vm.sockets.stderr.on("data", (c: Buffer) => this.deliver(c, "err"));
  }

  async runStep(
    command: string,
    env: Record<string, string>,
    opts: StepOptions,
    onStdout: OutputListener,
    onStderr: OutputListener,
  ): Promise<StepResult> {
    if (this.destroying) throw new MicrovmError("MICROVM.DESTROYED", `sandbox ${this.id} is destroyed`);
    if (this.streams) throw new Error(`sandbox ${this.id} is already running a step`);
    const cwd = guestWorkingDirectory(opts.workingDirectory);
    const launcher = stepLauncher(command, this.hasEgress ? { ...env, ...egressProxyEnv(GUEST_PROXY_URL) } : env, cwd);
    if (!this.vm.alive) throw new MicrovmError("MICROVM.VM_LOST", `sandbox ${this.id}: VM is not running`);
    const startedAt = monotonicNow();
    const streams: Streams = { out: onStdout, err: onStderr, outBytes: 0, errBytes: 0, onProgress: () => undefined };
    this.streams = streams;
    this.signalSent = null;
    this.pendingSignal = null;
    try {
      if (!this.prepared) await this.prepare();
      this.vm.ctl.send(`RUN ${Buffer.from(launcher).toString("base64")}`);
      await this.vm.ctl.expect("START", START_TIMEOUT_MS);
      this.started = true;
      // A kill() that came while the workspace was still being pushed applies to this step.
      if (this.pendingSignal) this.kill(this.pendingSignal);
      const exit = await this.vm.ctl.expect("EXIT", Infinity, "the step");
      const [status, outBytes, errBytes] = exit.slice(0, 3).map(Number) as [number, number, number];
      const limit = guestLimit(exit[3]);
      if (![status, outBytes, errBytes].every(Number.isSafeInteger) || limit === undefined)
        throw new MicrovmError(
          "MICROVM.GUEST_PROTOCOL",
          `bad EXIT line ${JSON.stringify(exit.join(" ").slice(0, 100))}`,
        );
      await this.drained(streams, outBytes, errBytes);
      return { ...this.classify(status), limit, durationMs: monotonicNow() - startedAt };
    } catch (err) {
      // The VM went away under the step: ours (kill/destroy) is a signal, anything else a lost VM.
      if (this.hardKilled || this.destroying)
        return { exitCode: null, signal: "SIGKILL", durationMs: monotonicNow() - startedAt };
      if (!this.vm.alive || (err instanceof MicrovmError && err.code === "MICROVM.VM_LOST")) {
        throw new SandboxLostError(
          `VM of sandbox ${this.id} exited during the step (console: ${this.runDir}/console.log)`,
        );
      }
      throw err;
    } finally {
      this.streams = null;
      this.started = false;
    }
  }

  kill(signal: NodeJS.Signals): void {
    if (!this.streams || !this.vm.alive) return;
    if (!this.started) {
      if (this.pendingSignal !== "SIGKILL") this.pendingSignal = signal;
      return;
    }
    this.signalSent = signal;
    try {
      this.vm.ctl.send(`KILL ${signal.replace(/^SIG/, "")}`);
    } catch {
      // control port already gone: the VM is exiting
    }
    if (signal === "SIGKILL") {
      const streams = this.streams;
      void sleep(HARD_KILL_AFTER_MS).then(() => {
        if (this.streams !== streams || !this.vm.alive) return;
        this.hardKilled = true;
        void this.vm.kill();
      });
    }
  }

  /** Copies the guest's /workspace back into hostWorkspaceDir (for artifact publishing). */
  async collectWorkspace(): Promise<void> {
    if (this.destroying || !this.vm.alive)
      throw new MicrovmError("MICROVM.VM_LOST", `sandbox ${this.id}: VM is not running`);
    if (this.streams) throw new Error(`sandbox ${this.id} is running a step`);
    // No step ran: the guest never received the workspace, so the host copy is the truth.
    if (!this.prepared) return;
    await pullWorkspace(this.vm.ctl, this.vm.sockets.data, this.hostWorkspaceDir, this.runDir, this.pullMaxBytes());
  }

  destroy(): Promise<void> {
    this.destroying ??= (async () => {
      await this.vm.kill();
      await rm(this.runDir, { recursive: true, force: true, maxRetries: 3 });
      this.onDestroyed();
    })();
    return this.destroying;
  }

  /** Fresh clock and entropy (a restored snapshot shares both with every clone), then the workspace. */
  private async prepare(): Promise<void> {
    const seconds = Math.floor(Date.now() / 1000);
    this.vm.ctl.send(`PREP ${seconds} ${randomBytes(64).toString("base64")}`);
    await this.vm.ctl.expect("PREP-OK", PREP_TIMEOUT_MS);
    await pushWorkspace(this.vm.ctl, this.vm.sockets.data, this.hostWorkspaceDir, this.runDir);
    this.prepared = true;
  }

  private pullMaxBytes(): number {
    return this.diskMiB * 1024 * 1024 + PULL_SLACK_BYTES;
  }

  private classify(status: number): { exitCode: number | null; signal: NodeJS.Signals | null } {
    // The guest shell reports 128+n for a step killed by signal n; we only call it a signal when we sent it.
    const sent = this.signalSent;
    if (sent && (status === 128 + constants.signals[sent] || status === 128 + constants.signals.SIGKILL)) {
      return { exitCode: null, signal: status === 128 + constants.signals.SIGKILL ? "SIGKILL" : sent };
    }
    return { exitCode: status, signal: null };
  }

  private deliver(chunk: Buffer, which: "out" | "err"): void {
    const s = this.streams;
    if (!s) return; // between steps nothing legitimate writes; drained and dropped
    if (which === "out") {
      s.outBytes += chunk.length;
      s.out(chunk);
    } else {
      s.errBytes += chunk.length;
      s.err(chunk);
    }
    s.onProgress();
  }

  /** EXIT carries the byte counts the guest copied; wait until all of them have arrived. */
  private drained(s: Streams, outBytes: number, errBytes: number): Promise<void> {
    if (s.outBytes >= outBytes && s.errBytes >= errBytes) return Promise.resolve();
    return new Promise((resolve, reject) => {
      s.onProgress = () => {
        if (s.outBytes >= outBytes && s.errBytes >= errBytes) resolve();
      };
      void this.vm.exited.then(() =>
        reject(new MicrovmError("MICROVM.VM_LOST", "VM exited before the step's output arrived")),
      );
    });
  }
}

/**
 * The limit the guest says a failed step ran into (agent.sh limit_hit); undefined for anything else
 * (a protocol error). Guest-reported, so a step that took over the guest could name another limit
 * or none: it only ever picks between user_failure causes of its own job (ADR 0041).
 */
function guestLimit(field: string | undefined): SandboxLimit | null | undefined {
  if (field === undefined || field === "-") return null;
  return (Object.keys(SANDBOX_LIMIT_CAUSES) as SandboxLimit[]).find((l) => l === field);
}
