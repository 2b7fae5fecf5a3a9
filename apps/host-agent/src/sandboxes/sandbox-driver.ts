import path from "node:path";
import type { RunnerSize, SandboxLimit } from "@kiln/domain";
// The SandboxDriver port (conventions rule 10): how the agent gets an isolated place to run one
// attempt's steps. One folder per driver: `process/` (host processes + namespaces) and `microvm/`
// (QEMU microvm, one VM per job, warm pool of snapshot restores):
//   - create(spec) boots/prepares the sandbox (a microVM restores a snapshot or boots the image;
//     its cost is the attempt's image_ms),
//   - hostWorkspaceDir is where the agent checks the source out *before* any step runs (the process
//     driver uses it directly; the microvm driver ships it into the guest before the first step),
//   - paths are what steps see (guest paths), used for HOME/TMPDIR/KILN_WORKSPACE,
//   - runStep executes one shell command to completion with a clean, explicit environment,
//   - kill signals whatever the current step left running; destroy removes every trace.

/** What actually separates a step from the host, recorded per attempt. */
type IsolationLevel = "microvm" | "namespaces" | "none";

export interface SandboxIsolation {
  level: IsolationLevel;
  /** Human-readable account of what was applied, e.g. "pid,net,ipc,uts,mount namespaces". */
  detail: string;
}

export interface SandboxSpec {
  /** Unique per attempt; drivers use it to name the sandbox. Must match SAFE_SANDBOX_ID. */
  attemptId: string;
  /** Container/VM image requested by the job; drivers without images ignore it (and say so). */
  image: string | null;
  /**
   * The job image unpacked and verified by the agent (apps/host-agent/src/images), when the ticket
   * pinned one: `dir` is a read-only-by-convention rootfs shared between attempts (drivers copy or
   * overlay it, never write into it), `digest` its manifest digest. Drivers without images ignore it.
   */
  rootfs?: { dir: string; digest: string } | null;
  /**
   * The ticket's runs_on.size (issue 20; ADR 0041): the sandbox gets that size's vCPUs, memory,
   * process limit and writable disk (SIZE_RESOURCES in @kiln/domain, or the driver's override).
   */
  size?: RunnerSize;
}

/**
 * Thrown by runStep when the sandbox itself died under the step (a VM that crashed or was killed
 * from outside the driver): a platform failure of the sandbox, not a step that could not start.
 */
export class SandboxLostError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "SandboxLostError";
  }
}

/** Directory names and VM ids come from this; anything else is refused (no path games). */
export const SAFE_SANDBOX_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;

/** Paths as the step sees them. */
export interface SandboxPaths {
  workspace: string;
  home: string;
  tmp: string;
}

export interface StepOptions {
  /** Working directory relative to the workspace (default: the workspace root). */
  workingDirectory?: string;
}

export type OutputListener = (chunk: Buffer) => void;

export interface StepResult {
  /** Exit code of the step's shell; null when it was killed by a signal. */
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  /** Wall time from spawn to exit, monotonic. */
  durationMs: number;
  /**
   * Set when the step failed and the sandbox had run into one of its size's limits during it
   * (disk full, memory exhausted, process limit): the job's cause names it (SANDBOX_LIMIT_CAUSES).
   */
  limit?: SandboxLimit | null;
}

export interface Sandbox {
  readonly id: string;
  readonly isolation: SandboxIsolation;
  readonly paths: SandboxPaths;
  readonly hostWorkspaceDir: string;
  /**
   * Agent-owned scratch on the same filesystem as hostWorkspaceDir, invisible to steps: spools and
   * staging that are renamed into the workspace must not cross a device (a process sandbox's
   * workspace lives on its own work disk, ADR 0041). Absent: the workspace's parent directory.
   */
  readonly hostScratchDir?: string;
  /**
   * Runs `/bin/sh -c command` inside the sandbox with exactly `env` (nothing inherited from the
   * agent). Output is delivered as it arrives and is always drained, so a chatty step can never
   * block on a full pipe. One step at a time.
   */
  runStep(
    command: string,
    env: Record<string, string>,
    opts: StepOptions,
    onStdout: OutputListener,
    onStderr: OutputListener,
  ): Promise<StepResult>;
  /** Sends `signal` to everything the running step started. No-op when no step runs. */
  kill(signal: NodeJS.Signals): void;
  /** Kills everything left and removes all sandbox state. Idempotent; safe to call concurrently. */
  destroy(): Promise<void>;
  /**
   * Drivers whose steps do not write hostWorkspaceDir directly (microvm) copy the step-visible
   * workspace back into it; call it, when present, before reading outputs from hostWorkspaceDir.
   */
  collectWorkspace?(): Promise<void>;
}

export interface SandboxDriver {
  readonly kind: "process" | "microvm";
  /** What every sandbox from this driver gets (probed once at startup). */
  readonly isolation: SandboxIsolation;
  create(spec: SandboxSpec): Promise<Sandbox>;
  /** Removes sandboxes a previous (crashed) agent left behind in the driver's own storage. */
  removeLeftovers(): Promise<number>;
  /** Releases what the driver holds besides sandboxes (the microvm warm pool). */
  close?(): Promise<void>;
  /** Pre-booted sandboxes ready now and how often a create found one (fleet stats, issue 22). */
  warmPoolStats?(): { size: number; hits: number; misses: number };
}

/** Where the agent stages what it moves into a sandbox's workspace (see Sandbox.hostScratchDir). */
export function scratchDirOf(sandbox: Pick<Sandbox, "hostScratchDir" | "hostWorkspaceDir">): string {
  return sandbox.hostScratchDir ?? path.dirname(sandbox.hostWorkspaceDir);
}
