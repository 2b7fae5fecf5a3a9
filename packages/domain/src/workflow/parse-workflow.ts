import { quote, WorkflowInvalid, workflowError } from "./errors.ts";
import { WORKFLOW_LIMITS } from "./limits.ts";
import { loadYaml } from "./load-yaml.ts";
import { expandJobs } from "./expand-matrix.ts";
import { checkExpressions, substituteExpressions } from "./expressions.ts";
import { readEnv } from "./read-fields.ts";
import { readJob, type JobDraft } from "./read-job.ts";
import { readSchedules } from "./read-runner.ts";
import { located, Reader, type Located } from "./reader.ts";
import { resolveDependencies } from "./resolve-dependencies.ts";
import type { ParseContext, ParseResult, WorkflowDefinition, WorkflowError } from "./types.ts";

/**
 * Never throws: every failure, including yaml internals giving up, becomes an error value. The
 * result is expanded (matrix jobs become one job per combination) with `${{ inputs.* }}` read from
 * the context: what the run freezes.
 */
export function parseWorkflow(source: string, context: ParseContext = {}): ParseResult {
  try {
    if (typeof source !== "string") {
      return { ok: false, error: workflowError(null, null, "workflow source must be a string") };
    }
    return { ok: true, definition: parseOrThrow(source, context) };
  } catch (error) {
    return { ok: false, error: toWorkflowError(error) };
  }
}

function parseOrThrow(source: string, context: ParseContext): WorkflowDefinition {
  const { root, position } = loadYaml(source);
  const reader = new Reader(position);
  const rootAt = located(root, "");
  const fields = reader.mapping(
    rootAt,
    ["version", "env", "pull_request", "schedules", "jobs"],
    "a mapping with version and jobs",
  );

  const versionAt = reader.required(fields, "version", rootAt);
  reader.integer(versionAt, 1, 1, "1");

  const envAt = fields.get("env");
  const env = envAt ? readEnv(reader, envAt) : {};
  // The workflow's env is shared by every job, so only inputs may appear in it, not matrix values.
  const envSites = envAt ? reader.mapping(envAt, null) : new Map();
  for (const [key, at] of envSites) checkExpressions(reader, at, env[key] ?? "", { matrixKeys: null });
  const inputs = Object.fromEntries(Object.entries(context.inputs ?? {}).map(([k, v]) => [k, String(v)]));

  const jobsAt = reader.required(fields, "jobs", rootAt);
  const items = reader.list(jobsAt, "a non-empty list of jobs", { min: 1, max: WORKFLOW_LIMITS.maxJobs });
  const drafts: JobDraft[] = [];
  const seen = new Set<string>();
  for (const [index, item] of items.entries()) {
    const draft = readJob(reader, item, index);
    if (seen.has(draft.job.name)) {
      reader.fail(draft.nameAt, `${draft.nameAt.path}: duplicate job name ${quote(draft.job.name)}`);
    }
    seen.add(draft.job.name);
    drafts.push(draft);
  }
  resolveDependencies(reader, drafts);
  const prAt = fields.get("pull_request");
  const pullRequest = prAt ? readPullRequest(reader, prAt) : null;
  const jobs = expandJobs(reader, drafts, inputs);
  const values = { matrix: {}, inputs };
  const definition: WorkflowDefinition = {
    version: 1,
    jobs,
    env: Object.fromEntries(Object.entries(env).map(([k, v]) => [k, substituteExpressions(v, values)])),
    ...(pullRequest ? { pullRequest } : {}),
  };
  const schedulesAt = fields.get("schedules");
  if (schedulesAt) definition.schedules = readSchedules(reader, schedulesAt);
  return definition;
}

function toWorkflowError(error: unknown): WorkflowError {
  if (error instanceof WorkflowInvalid) return error.detail;
  // The size and nesting guards should make this unreachable; it stays as the
  // last line of defence for a stack overflow inside the yaml library.
  if (error instanceof RangeError) {
    return workflowError(null, null, "workflow is too deeply nested or too complex to parse");
  }
  const reason = error instanceof Error ? error.message : String(error);
  return workflowError(null, null, `workflow could not be parsed (internal error: ${reason})`);
}

/** `pull_request: {cancel_superseded: true}`: a newer commit's run cancels the PR's older unfinished runs. */
function readPullRequest(reader: Reader, at: Located): { cancelSuperseded: boolean } {
  const f = reader.mapping(at, ["cancel_superseded"]);
  const c = f.get("cancel_superseded");
  return { cancelSuperseded: c ? reader.boolean(c) : false };
}
