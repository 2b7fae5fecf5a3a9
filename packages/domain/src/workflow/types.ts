import type { CacheKind } from "../caches/index.ts";

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
}

export interface WorkflowDefinition {
  version: 1;
  jobs: WorkflowJob[];
  env: Record<string, string>;
  /** `pull_request:` options (issue 19); absent when the file has none. */
  pullRequest?: { cancelSuperseded: boolean };
}

export interface WorkflowError {
  code: "WORKFLOW.INVALID";
  message: string;
  line: number | null;
  column: number | null;
  path: string | null;
}

export type ParseResult = { ok: true; definition: WorkflowDefinition } | { ok: false; error: WorkflowError };
