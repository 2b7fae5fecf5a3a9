// Runner sizes (issue 20, made real resources by issue 30, docs/adr/0041-job-sizes.md): what
// `runs_on.size` asks for and what a host gives the job: vCPUs, memory and a writable disk that
// holds the workspace, /tmp, $HOME and the image's writable layer. A job that names no size is small.
export const RUNNER_SIZES = ["small", "medium", "large"] as const;
export type RunnerSize = (typeof RUNNER_SIZES)[number];

export interface SizeResources {
  vcpus: number;
  memoryMiB: number;
  /** The writable disk (sparse: it costs the host only what the job writes). */
  diskMiB: number;
  /** Processes and threads the job may have at once (the fork-bomb bound). */
  maxProcesses: number;
}

// Figures for the reference host (2 cores, 24 GiB RAM; ADR 0041): vCPUs never exceed the host's
// cores (a vCPU beyond them only adds contention), and two large jobs plus the warm pool fit in RAM.
export const SIZE_RESOURCES: Readonly<Record<RunnerSize, SizeResources>> = {
  small: { vcpus: 1, memoryMiB: 2048, diskMiB: 10240, maxProcesses: 2048 },
  medium: { vcpus: 2, memoryMiB: 4096, diskMiB: 20480, maxProcesses: 4096 },
  large: { vcpus: 2, memoryMiB: 8192, diskMiB: 40960, maxProcesses: 8192 },
};

/**
 * Why a step failed when it ran into its size's limits: each ends the job as user_failure with this
 * cause (the job asked for too little, or its build grew), never a hang or a platform failure.
 */
export const SANDBOX_LIMIT_CAUSES = {
  disk_full: "sandbox.disk_full",
  oom: "sandbox.oom",
  pids_exhausted: "sandbox.pids_exhausted",
} as const;
export type SandboxLimit = keyof typeof SANDBOX_LIMIT_CAUSES;

export const DEFAULT_RUNNER_SIZE: RunnerSize = "small";

/** Runner labels are matched exactly; a tight alphabet keeps them safe in messages, SQL arrays and env values. */
export const RUNNER_LABEL_PATTERN = /^[a-z0-9][a-z0-9._-]{0,49}$/;
export const MAX_RUNNER_LABELS = 16;

export function isRunnerSize(s: string): s is RunnerSize {
  return (RUNNER_SIZES as readonly string[]).includes(s);
}

/** What a job asks of its host. */
export interface RunnerRequirement {
  labels: readonly string[];
  size: RunnerSize;
}

/** Labels the job needs that the host does not have, sorted (empty: the host has them all). */
export function missingLabels(need: readonly string[], have: readonly string[]): string[] {
  const h = new Set(have);
  return [...new Set(need)].filter((l) => !h.has(l)).sort();
}
