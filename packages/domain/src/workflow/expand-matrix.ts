import { quote } from "./errors.ts";
import { hasExpression, substituteExpressions, type ExpressionValues } from "./expressions.ts";
import { checkCacheVersion, checkImageRef } from "./read-fields.ts";
import type { JobDraft } from "./read-job.ts";
import { MATRIX_LIMITS, matrixEnvName, type MatrixCombination, type Strategy } from "./read-strategy.ts";
import { label, type Reader } from "./reader.ts";
import type { WorkflowJob } from "./types.ts";

const NAME_VALUE_CHARS = 40;

/**
 * Expands every job with `strategy` into one job per matrix combination and substitutes the
 * expressions of the allowed fields (ADR 0030). Runs at freeze, inside parseWorkflow, so what is
 * frozen with the run is the expanded list: attempts, re-runs and the claim read plain jobs. A job
 * another job needs is needed in every expansion (`needs: test` waits for all of them).
 */
export function expandJobs(reader: Reader, drafts: readonly JobDraft[], inputs: Record<string, string>): WorkflowJob[] {
  const combos = drafts.map((d) => (d.strategy ? combinationsOf(reader, d, d.strategy) : null));
  const indicesOf: number[][] = [];
  let next = 0;
  for (const c of combos) {
    const n = c ? c.length : 1;
    indicesOf.push(Array.from({ length: n }, (_, i) => next + i));
    next += n;
  }
  if (next > MATRIX_LIMITS.maxExpandedJobs) {
    reader.fail(
      drafts[0]?.nameAt ?? { node: null, offset: 0, path: "jobs" },
      `the workflow expands to ${next} jobs; at most ${MATRIX_LIMITS.maxExpandedJobs} are allowed`,
      "WORKFLOW.MATRIX_TOO_LARGE",
    );
  }
  const finalName = new Map<string, string>();
  for (const d of drafts) {
    if (!d.strategy) finalName.set(d.job.name, substituteExpressions(d.job.name, { matrix: {}, inputs }));
  }
  const jobs: WorkflowJob[] = [];
  for (const [t, draft] of drafts.entries()) {
    const needs = draft.job.needs.flatMap((n) => indicesOf[n] ?? []);
    const restore = draft.job.artifacts.restore.map((r, i) => {
      const producer = drafts.find((d) => d.job.name === r.fromJob);
      const site = draft.restoreSites[i];
      if (producer?.strategy && site) {
        reader.fail(
          site.fromAt,
          `${label(site.fromAt)}: ${quote(r.fromJob)} is a matrix job; each expansion publishes its own artifacts, so restore from a job without a matrix`,
        );
      }
      return { ...r, fromJob: finalName.get(r.fromJob) ?? r.fromJob };
    });
    const list = combos[t];
    const strategy = draft.strategy;
    if (!list || !strategy) {
      jobs.push(instantiate(reader, draft, { matrix: {}, inputs }, null, jobs.length, needs, restore));
      continue;
    }
    for (const combo of list) {
      const values = Object.fromEntries(combo);
      const matrix = { job: draft.job.name, values, maxParallel: strategy.maxParallel, failFast: strategy.failFast };
      jobs.push(instantiate(reader, draft, { matrix: values, inputs }, matrix, jobs.length, needs, restore));
    }
  }
  const seen = new Set<string>();
  for (const [i, job] of jobs.entries()) {
    if (seen.has(job.name)) {
      const at = drafts.find((d) => indicesOf[d.job.index]?.includes(i))?.nameAt;
      if (at) reader.fail(at, `${label(at)}: two jobs are named ${quote(job.name)} after matrix expansion`);
    }
    seen.add(job.name);
  }
  return jobs;
}

function instantiate(
  reader: Reader,
  draft: JobDraft,
  values: ExpressionValues,
  matrix: WorkflowJob["matrix"] | null,
  index: number,
  needs: number[],
  restore: WorkflowJob["artifacts"]["restore"],
): WorkflowJob {
  const template = draft.job;
  const at = draft.templateAt;
  // Entries, then fromEntries: a variable called __proto__ stays data (as in readEnv). The matrix
  // variables last: a step always sees the expansion it belongs to.
  const env: [string, string][] = [
    ...Object.entries(template.env).map(([k, v]): [string, string] => [k, substituteExpressions(v, values)]),
    ...Object.entries(values.matrix).map(([k, v]): [string, string] => [matrixEnvName(k), v]),
  ];
  const image = template.image ? { ref: substituteExpressions(template.image.ref, values) } : null;
  if (image && at.image && hasExpression(template.image?.ref ?? "")) checkImageRef(reader, at.image, image.ref);
  const cache = template.cache
    ? { ...template.cache, version: substituteExpressions(template.cache.version, values) }
    : null;
  if (cache && at.cacheVersion && hasExpression(template.cache?.version ?? "")) {
    checkCacheVersion(reader, at.cacheVersion, cache.version);
  }
  const job: WorkflowJob = {
    ...template,
    index,
    name: expansionName(template.name, values, matrix),
    needs,
    image,
    env: Object.fromEntries(env),
    cache,
    artifacts: { publish: template.artifacts.publish, restore },
  };
  if (matrix) job.matrix = matrix;
  return job;
}

/** `test (jdk: 17, os: linux)`, unless the name says itself where the values go. */
function expansionName(template: string, values: ExpressionValues, matrix: WorkflowJob["matrix"] | null): string {
  if (hasExpression(template) || !matrix) return substituteExpressions(template, values);
  const parts = Object.entries(matrix.values).map(([k, v]) => {
    const shown = v.length > NAME_VALUE_CHARS ? `${v.slice(0, NAME_VALUE_CHARS - 1)}…` : v;
    return `${k}: ${shown}`;
  });
  return `${template} (${parts.join(", ")})`;
}

/**
 * The combinations, GitHub Actions' rules: the product of the axes in the order written, minus every
 * combination an exclude entry matches on all of its keys; then each include entry is merged into
 * every combination it does not contradict on an axis value, or added as a new one if it fits none.
 */
function combinationsOf(reader: Reader, draft: JobDraft, s: Strategy): MatrixCombination[] {
  const product = s.axes.reduce((n, a) => n * a.values.length, s.axes.length > 0 ? 1 : 0);
  const tooLarge = (n: number, what: string): never =>
    reader.fail(
      s.at,
      `${label(s.at)}: job ${quote(draft.job.name)} ${what} ${n} combinations; at most ${MATRIX_LIMITS.maxExpansions} are allowed`,
      "WORKFLOW.MATRIX_TOO_LARGE",
    );
  if (product > MATRIX_LIMITS.maxProduct) tooLarge(product, "has a matrix of");
  let combos: MatrixCombination[] = product > 0 ? [new Map()] : [];
  for (const axis of s.axes) {
    combos = combos.flatMap((c) => axis.values.map((v) => new Map([...c, [axis.key, v]])));
  }
  combos = combos.filter((c) => !s.exclude.some((ex) => [...ex].every(([k, v]) => c.get(k) === v)));
  const axisKeys = new Set(s.axes.map((a) => a.key));
  const base = [...combos];
  for (const inc of s.include) {
    const fits = base.filter((c) => [...inc].every(([k, v]) => !axisKeys.has(k) || c.get(k) === v));
    for (const c of fits) for (const [k, v] of inc) c.set(k, v);
    if (fits.length === 0) combos.push(new Map(inc));
  }
  if (combos.length === 0) {
    reader.fail(
      s.at,
      `${label(s.at)}: job ${quote(draft.job.name)} expands to no jobs (exclude removed every combination)`,
    );
  }
  if (combos.length > MATRIX_LIMITS.maxExpansions) tooLarge(combos.length, "expands to");
  return combos;
}
