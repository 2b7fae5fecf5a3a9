import { isMap } from "yaml";
import { quote } from "./errors.ts";
import { WORKFLOW_LIMITS } from "./limits.ts";
import { checkExpressions } from "./expressions.ts";
import {
  readArtifacts,
  readCache,
  readCommand,
  readDisplayName,
  readEnv,
  readSecretNames,
  readSecretsRequired,
  readImageRef,
  readJobName,
  type RestoreSite,
} from "./read-fields.ts";
import { readStrategy, type Strategy } from "./read-strategy.ts";
import { label, type Located, type Reader } from "./reader.ts";
import { readRunsOn } from "./read-runner.ts";
import type { Tier, WorkflowJob } from "./types.ts";

const JOB_KEYS = [
  "name",
  "image",
  "steps",
  "needs",
  "env",
  "timeout_minutes",
  "tier",
  "cache",
  "artifacts",
  "secrets",
  "secrets_required",
  "strategy",
  "runs_on",
] as const;
const TIERS: readonly Tier[] = ["interactive", "scheduled", "background"];
const DEFAULT_TIMEOUT_MINUTES = 60;

/**
 * A job whose own fields are valid but whose cross-job references (needs,
 * restore.from_job) are still names, because they may point at later jobs.
 */
export interface JobDraft {
  job: WorkflowJob;
  nameAt: Located;
  /** null when the job has no `needs` key and so depends on its predecessor. */
  needs: { name: string; at: Located }[] | null;
  needsAt: Located | null;
  restoreSites: RestoreSite[];
  strategy: Strategy | null;
  /** Where the fields that may hold expressions were written, for checks after substitution. */
  templateAt: { image: Located | null; cacheVersion: Located | null; env: Map<string, Located> };
}

export function readJob(reader: Reader, at: Located, index: number): JobDraft {
  const fields = reader.mapping(at, JOB_KEYS, "a job mapping with name and steps");
  const nameAt = reader.required(fields, "name", at);
  const name = readJobName(reader, nameAt);
  const strategyAt = fields.get("strategy");
  const strategy = strategyAt ? readStrategy(reader, strategyAt) : null;
  const scope = { matrixKeys: strategy ? strategy.keys : null };
  checkExpressions(reader, nameAt, name, scope);
  const { steps, stepNames } = readSteps(reader, reader.required(fields, "steps", at));

  const imageAt = fields.get("image");
  const envAt = fields.get("env");
  const timeoutAt = fields.get("timeout_minutes");
  const tierAt = fields.get("tier");
  const cacheAt = fields.get("cache");
  const artifactsAt = fields.get("artifacts");
  const needsAt = fields.get("needs") ?? null;
  const secretsAt = fields.get("secrets");
  const secretsRequiredAt = fields.get("secrets_required");
  const { artifacts, restoreSites } = artifactsAt
    ? readArtifacts(reader, artifactsAt)
    : { artifacts: { publish: [], restore: [] }, restoreSites: [] };

  const image = imageAt ? readImageRef(reader, imageAt) : null;
  if (image) checkExpressions(reader, image.refAt, image.ref, scope);
  const env = envAt ? readEnv(reader, envAt) : {};
  const envSites = envAt ? reader.mapping(envAt, null) : new Map<string, Located>();
  for (const [key, valueAt] of envSites) checkExpressions(reader, valueAt, env[key] ?? "", scope);
  const cache = cacheAt ? readCache(reader, cacheAt) : null;
  const cacheVersionAt = cacheAt && cache ? (reader.mapping(cacheAt, null).get("version") ?? null) : null;
  if (cache && cacheVersionAt) checkExpressions(reader, cacheVersionAt, cache.version, scope);

  const job: WorkflowJob = {
    index,
    name,
    needs: [],
    image: image ? { ref: image.ref } : null,
    env,
    steps,
    stepNames,
    timeoutMinutes: timeoutAt
      ? reader.integer(
          timeoutAt,
          1,
          WORKFLOW_LIMITS.maxTimeoutMinutes,
          `a whole number of minutes from 1 to ${WORKFLOW_LIMITS.maxTimeoutMinutes}`,
        )
      : DEFAULT_TIMEOUT_MINUTES,
    tier: tierAt ? readTier(reader, tierAt) : null,
    cache,
    artifacts,
    secrets: secretsAt ? readSecretNames(reader, secretsAt) : [],
    secretsRequired: secretsRequiredAt ? readSecretsRequired(reader, secretsRequiredAt) : false,
  };
  // runs_on (issue 20, ADR 0031): copied to every matrix expansion with the rest of the job.
  const runsOnAt = fields.get("runs_on");
  if (runsOnAt) job.runsOn = readRunsOn(reader, runsOnAt);
  return {
    job,
    nameAt,
    needs: needsAt ? readNeeds(reader, needsAt) : null,
    needsAt,
    restoreSites,
    strategy,
    templateAt: { image: image?.refAt ?? null, cacheVersion: cacheVersionAt, env: envSites },
  };
}

function readSteps(reader: Reader, at: Located): { steps: string[]; stepNames: (string | null)[] } {
  const items = reader.list(at, "a non-empty list of commands", {
    min: 1,
    max: WORKFLOW_LIMITS.maxStepsPerJob,
  });
  const steps: string[] = [];
  const stepNames: (string | null)[] = [];
  for (const item of items) {
    if (isMap(item.node)) {
      const fields = reader.mapping(item, ["name", "run"]);
      const runAt = reader.required(fields, "run", item);
      const nameAt = fields.get("name");
      stepNames.push(nameAt ? readDisplayName(reader, nameAt) : null);
      steps.push(readCommand(reader, runAt, "a shell command string"));
    } else {
      stepNames.push(null);
      steps.push(readCommand(reader, item, "a shell command string or {run: command}"));
    }
  }
  return { steps, stepNames };
}

function readNeeds(reader: Reader, at: Located): { name: string; at: Located }[] {
  const items = reader.list(at, "a list of job names", { min: 0, max: WORKFLOW_LIMITS.maxJobs });
  const seen = new Set<string>();
  return items.map((item) => {
    const name = reader.text(item, "a job name");
    if (seen.has(name)) reader.fail(item, `${label(at)} lists ${quote(name)} twice`);
    seen.add(name);
    return { name, at: item };
  });
}

function readTier(reader: Reader, at: Located): Tier {
  const tier = reader.text(at);
  const known = TIERS.find((candidate) => candidate === tier);
  if (!known) reader.fail(at, `${label(at)} must be one of: ${TIERS.join(", ")} (got ${quote(tier)})`);
  return known;
}
