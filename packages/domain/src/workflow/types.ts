import type { CacheKind } from "../caches/index.ts";
import type { RunnerSize } from "../dispatch/index.ts";

/** `runs_on` as written (issue 20): absent keys mean the default pool, no labels, size small. */
export interface RunsOn {
  pool?: string;
  labels?: string[];
  size?: RunnerSize;
}

export interface WorkflowSchedule {
  cron: string;
  /** IANA name; UTC when the file names none. */
  timezone: string;
}

export type Tier = "interactive" | "scheduled" | "background";

export interface WorkflowJob {
  /** Position in the file, 0-based. */
  index: number;
  name: string;
  /**
   * Indices of the jobs this one waits for. Without a `needs` key a job waits for
   * the one before it, so a plain list of jobs runs as a sequence.
   */
  needs: number[];
  /**
   * As written in the file; `digest` (sha256 of the linux/amd64 image manifest) is added when the
   * run is frozen, so every attempt runs the same bytes however the tag moves later.
   */
  image: { ref: string; digest?: string } | null;
  env: Record<string, string>;
  /** Shell commands; `{name, run}` steps are reduced to `run`, with the name kept alongside. */
  steps: string[];
  stepNames: (string | null)[];
  timeoutMinutes: number;
  tier: Tier | null;
  cache: { kind: CacheKind; version: string; inputs: string[]; paths: string[] } | null;
  artifacts: {
    publish: { name: string; path: string }[];
    restore: { fromJob: string; name: string; path: string }[];
  };
  /** Present only when the job has `runs_on` (frozen with the definition). */
  runsOn?: RunsOn;
}

export interface WorkflowDefinition {
  version: 1;
  jobs: WorkflowJob[];
  env: Record<string, string>;
  /** Present only when the file has `schedules:`; recorded when a default-branch commit is frozen. */
  schedules?: WorkflowSchedule[];
}

export interface WorkflowError {
  code: "WORKFLOW.INVALID";
  message: string;
  line: number | null;
  column: number | null;
  path: string | null;
}

export type ParseResult = { ok: true; definition: WorkflowDefinition } | { ok: false; error: WorkflowError };
