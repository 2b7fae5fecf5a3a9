// Runner sizes (issue 20): what `runs_on.size` asks for and what a microVM host gives the job.
// `small` is what every microVM got before sizes existed (and what the warm pool's snapshot is
// booted with), so a job that names no size is a small job and old agents serve exactly that.
export const RUNNER_SIZES = ["small", "medium", "large"] as const;
export type RunnerSize = (typeof RUNNER_SIZES)[number];

export interface SizeResources {
  vcpus: number;
  memoryMiB: number;
}

export const SIZE_RESOURCES: Readonly<Record<RunnerSize, SizeResources>> = {
  small: { vcpus: 1, memoryMiB: 256 },
  medium: { vcpus: 2, memoryMiB: 1024 },
  large: { vcpus: 4, memoryMiB: 4096 },
};

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
