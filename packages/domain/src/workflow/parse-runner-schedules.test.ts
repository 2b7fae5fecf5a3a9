import { describe, expect, it } from "vitest";
import { parseError, parseOk, workflowWithJobs } from "./test-support.ts";

const job = (extra: string) => workflowWithJobs(`name: build\nsteps: [make]\n${extra}`);

describe("runs_on", () => {
  it("freezes pool, labels (sorted, deduplicated) and size with the job", () => {
    const def = parseOk(job("runs_on: {pool: gpu-pool, labels: [gpu, cuda12, gpu], size: large}"));
    expect(def.jobs[0]?.runsOn).toEqual({ pool: "gpu-pool", labels: ["cuda12", "gpu"], size: "large" });
  });

  it("names an org pool as <org>/<name> (issue 22), never with more than one slash", () => {
    expect(parseOk(job("runs_on: {pool: acme/gpu, labels: [gpu]}")).jobs[0]?.runsOn).toEqual({
      pool: "acme/gpu",
      labels: ["gpu"],
    });
    expect(parseError(job("runs_on: {pool: a/b/c}")).message).toContain("or <org>/<name> for an org pool");
    expect(parseError(job("runs_on: {pool: /gpu}")).path).toBe("jobs[0].runs_on.pool");
  });

  it("leaves a job without runs_on exactly as before (no key at all)", () => {
    expect(parseOk(job("")).jobs[0]).not.toHaveProperty("runsOn");
  });

  it("names what is wrong", () => {
    expect(parseError(job("runs_on: {size: huge}")).message).toContain(
      'jobs[0].runs_on.size must be one of: small, medium, large (got "huge")',
    );
    expect(parseError(job("runs_on: {labels: [GPU]}")).message).toContain("jobs[0].runs_on.labels[0] must be 1-50");
    expect(parseError(job("runs_on: {pool: 'a b'}")).path).toBe("jobs[0].runs_on.pool");
    expect(parseError(job("runs_on: {}")).message).toContain("must name a pool, labels or a size");
    expect(parseError(job("runs_on: {os: linux}")).path).toBe("jobs[0].runs_on.os");
  });
});

describe("schedules", () => {
  const withSchedules = (s: string) => `version: 1\nschedules: ${s}\njobs:\n  - name: nightly\n    steps: [make]\n`;

  it("reads cron and time zone (UTC when omitted), normalising the cron's spacing", () => {
    const def = parseOk(withSchedules('[{cron: "0 3 * * *", timezone: Europe/Berlin}, {cron: "*/15  *  * * *"}]'));
    expect(def.schedules).toEqual([
      { cron: "0 3 * * *", timezone: "Europe/Berlin" },
      { cron: "*/15 * * * *", timezone: "UTC" },
    ]);
  });

  it("leaves a file without schedules exactly as before", () => {
    expect(parseOk(job(""))).not.toHaveProperty("schedules");
  });

  it("refuses a bad cron or time zone at the line that has it", () => {
    const tz = parseError(withSchedules('[{cron: "0 3 * * *", timezone: Moon/Base}]'));
    expect(tz.message).toContain('unknown time zone "Moon/Base"');
    expect(tz.path).toBe("schedules[0].timezone");
    expect(parseError(withSchedules('[{cron: "0 0 3 * * *"}]')).message).toContain("five fields");
    expect(parseError(withSchedules("[{timezone: UTC}]")).message).toContain("cron");
    expect(parseError(withSchedules("[nightly]")).message).toContain("a mapping with cron and timezone");
  });
});

describe("runs_on with a matrix", () => {
  it("gives every expansion the job's runs_on", () => {
    const def = parseOk(job("runs_on: {labels: [gpu], size: medium}\nstrategy: {matrix: {cuda: ['11', '12']}}"));
    expect(def.jobs).toHaveLength(2);
    for (const j of def.jobs) expect(j.runsOn).toEqual({ labels: ["gpu"], size: "medium" });
  });
});
