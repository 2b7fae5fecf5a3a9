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
    /**
     * `promoted` is set only on the entry a deploy run's freeze adds (issue 18): the generation and
     * digest the environment's pointer names, served by id instead of by the producer's binding.
     */
    restore: { fromJob: string; name: string; path: string; promoted?: { generationId: string; sha256: string } }[];
  };
  /** Present only when the job has `runs_on` (frozen with the definition). */
  runsOn?: RunsOn;
  /**
   * Secret names the job declares (issue 16); only these are ever delivered, each into the step
   * environment under its own name. Frozen with the definition like every other field.
   */
  secrets: string[];
  /** With it, an untrusted run ends blocked_by_policy instead of running without its secrets. */
  secretsRequired: boolean;
  /**
   * Present only on an expansion of a job with `strategy.matrix` (issue 20, ADR 0030): the job's
   * name as written, this expansion's values (also in `env` as KILN_MATRIX_<KEY>), and the
   * strategy's sibling rules, which advanceGraph and the fail-fast cancel read.
   */
  matrix?: MatrixExpansion;
}

export interface MatrixExpansion {
  /** The job's `name:` as written in the file: what `needs` and the group of siblings go by. */
  job: string;
  values: Record<string, string>;
  /** At most this many siblings READY or running at once; null means no limit. */
  maxParallel: number | null;
  /** A user failure of one sibling cancels the siblings that have not finished. */
  failFast: boolean;
}

export interface WorkflowDefinition {
  version: 1;
  jobs: WorkflowJob[];
  env: Record<string, string>;
  /** `pull_request:` options (issue 19); absent when the file has none. */
  pullRequest?: { cancelSuperseded: boolean };
  /** Present only when the file has `schedules:`; recorded when a default-branch commit is frozen. */
  schedules?: WorkflowSchedule[];
}

/**
 * WORKFLOW.INVALID for anything malformed; the two named refusals of issue 20 have their own codes
 * so a caller (and the run's cause) can tell them apart from a typo.
 */
export type WorkflowErrorCode =
  | "WORKFLOW.INVALID"
  | "WORKFLOW.EXPRESSION_NOT_ALLOWED"
  | "WORKFLOW.MATRIX_TOO_LARGE"
  | "WORKFLOW.ENV_NAME_RESERVED";

export interface WorkflowError {
  code: WorkflowErrorCode;
  message: string;
  line: number | null;
  column: number | null;
  path: string | null;
}

/** What `${{ inputs.<name> }}` reads: the run's inputs (manual trigger), as given. */
export interface ParseContext {
  inputs?: Readonly<Record<string, string | number | boolean>>;
}

export type ParseResult = { ok: true; definition: WorkflowDefinition } | { ok: false; error: WorkflowError };
