import { isMap } from "yaml";
import { isRunnerSize, MAX_RUNNER_LABELS, RUNNER_LABEL_PATTERN, RUNNER_SIZES } from "../dispatch/index.ts";
import { SCHEDULE_LIMITS, specProblem } from "../schedules/index.ts";
import { quote } from "./errors.ts";
import { label, type Located, type Reader } from "./reader.ts";
import type { RunsOn, WorkflowSchedule } from "./types.ts";

// Pool names as the operator CLI accepts them (kiln pool set), or an org pool's `<org>/<name>`
// (issue 22, kiln pool create): they reach SQL only as parameters.
const POOL_PATTERN = /^([a-z0-9][a-z0-9-]{0,62}\/)?[a-z0-9][a-z0-9._-]{0,62}$/;

/** `runs_on: {pool, labels, size}` on a job: which hosts may run it (issue 20, ADR 0031). */
export function readRunsOn(reader: Reader, at: Located): RunsOn {
  const fields = reader.mapping(at, ["pool", "labels", "size"], "a mapping with pool, labels and/or size");
  if (fields.size === 0) reader.fail(at, `${label(at)} must name a pool, labels or a size`);
  const out: RunsOn = {};
  const poolAt = fields.get("pool");
  if (poolAt) {
    const pool = reader.text(poolAt, "a pool name");
    if (!POOL_PATTERN.test(pool))
      reader.fail(
        poolAt,
        `${label(poolAt)} must be 1-63 characters from a-z 0-9 . _ -, or <org>/<name> for an org pool (got ${quote(pool)})`,
      );
    out.pool = pool;
  }
  const labelsAt = fields.get("labels");
  if (labelsAt) {
    const items = reader.list(labelsAt, "a list of labels", { min: 0, max: MAX_RUNNER_LABELS });
    const labels = new Set<string>();
    for (const item of items) {
      const l = reader.text(item, "a label");
      if (!RUNNER_LABEL_PATTERN.test(l))
        reader.fail(item, `${label(item)} must be 1-50 characters from a-z 0-9 . _ - (got ${quote(l)})`);
      labels.add(l);
    }
    out.labels = [...labels].sort();
  }
  const sizeAt = fields.get("size");
  if (sizeAt) {
    const size = reader.text(sizeAt);
    if (!isRunnerSize(size))
      reader.fail(sizeAt, `${label(sizeAt)} must be one of: ${RUNNER_SIZES.join(", ")} (got ${quote(size)})`);
    out.size = size;
  }
  return out;
}

/** `schedules: [{cron, timezone}]` at the top of the file; recorded from the default branch only. */
export function readSchedules(reader: Reader, at: Located): WorkflowSchedule[] {
  const items = reader.list(at, "a list of {cron, timezone}", { min: 0, max: SCHEDULE_LIMITS.maxPerRepo });
  return items.map((item) => {
    if (!isMap(item.node)) reader.expected(item, "a mapping with cron and timezone");
    const fields = reader.mapping(item, ["cron", "timezone"], "a mapping with cron and timezone");
    const cronAt = reader.required(fields, "cron", item);
    const tzAt = fields.get("timezone");
    const spec = { cron: reader.text(cronAt, "a cron expression"), timezone: tzAt ? reader.text(tzAt) : "UTC" };
    const problem = specProblem(spec);
    if (problem) reader.fail(problem.field === "cron" || !tzAt ? cronAt : tzAt, `${label(item)}: ${problem.message}`);
    return { cron: spec.cron.trim().replace(/\s+/g, " "), timezone: spec.timezone };
  });
}
