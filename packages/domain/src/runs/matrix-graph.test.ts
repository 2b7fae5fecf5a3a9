import { describe, expect, it } from "vitest";
import { advanceGraph, failFastVictims, initialReadyJobs, type JobNode } from "./job-graph.ts";
import { planRerun, type RerunJob } from "./rerun-plan.ts";

const group = (maxParallel: number | null) => ({ key: "test", maxParallel });
const node = (jobIndex: number, over: Partial<JobNode> = {}): JobNode => ({
  jobIndex,
  needs: [],
  status: "pending",
  outcome: null,
  ...over,
});

describe("matrix groups in the job graph", () => {
  it("makes at most max_parallel expansions ready at freeze, lowest index first", () => {
    const jobs = [0, 1, 2, 3].map((i) => ({ jobIndex: i, needs: [], group: group(2) }));
    expect(initialReadyJobs([...jobs, { jobIndex: 4, needs: [] }])).toEqual([0, 1, 4]);
    expect(initialReadyJobs(jobs.map((j) => ({ ...j, group: group(null) })))).toEqual([0, 1, 2, 3]);
  });

  it("lets the next sibling in only when one finishes", () => {
    const jobs = [
      node(0, { group: group(2), status: "running" }),
      node(1, { group: group(2), status: "ready" }),
      node(2, { group: group(2) }),
      node(3, { group: group(2) }),
      node(4, { needs: [0, 1, 2, 3] }),
    ];
    expect(advanceGraph(jobs)).toEqual({ ready: [], skipped: [] });
    const oneDone = jobs.map((j) =>
      j.jobIndex === 0 ? { ...j, status: "completed" as const, outcome: "success" as const } : j,
    );
    expect(advanceGraph(oneDone)).toEqual({ ready: [2], skipped: [] });
  });

  it("waits for every expansion before a job that needs the matrix job", () => {
    const done = (i: number) => node(i, { group: group(null), status: "completed", outcome: "success" });
    const after = node(4, { needs: [0, 1, 2, 3] });
    expect(
      advanceGraph([done(0), done(1), done(2), node(3, { group: group(null), status: "running" }), after]).ready,
    ).toEqual([]);
    expect(advanceGraph([done(0), done(1), done(2), done(3), after]).ready).toEqual([4]);
  });

  it("names the unfinished siblings of a fail-fast group after a user failure, and only then", () => {
    const jobs = [
      { ...node(0, { group: group(null), status: "completed", outcome: "user_failure" }), failFast: true },
      { ...node(1, { group: group(null), status: "running" }), failFast: true },
      { ...node(2, { group: group(null), status: "completed", outcome: "success" }), failFast: true },
      { ...node(3, { group: group(null) }), failFast: true },
      node(4, { needs: [0, 1, 2, 3] }),
    ];
    expect(failFastVictims(jobs)).toEqual([1, 3]);
    expect(failFastVictims(jobs.map((j) => ({ ...j, failFast: false })))).toEqual([]);
    const platform = jobs.map((j) => (j.jobIndex === 0 ? { ...j, outcome: "platform_failure" as const } : j));
    expect(failFastVictims(platform)).toEqual([]);
  });
});

describe("planRerun", () => {
  const job = (
    jobIndex: number,
    outcome: RerunJob["outcome"],
    needs: number[] = [],
    reusedFrom: RerunJob["reusedFrom"] = null,
  ) => ({
    jobIndex,
    needs,
    outcome,
    reusedFrom,
    jobId: `job-${jobIndex}`,
  });

  it("pins the successful prefix and reruns the failed job with every descendant", () => {
    // build -> test (failed) -> package -> deploy; lint is independent.
    const plan = planRerun("parent", [
      job(0, "success"),
      job(1, "user_failure", [0]),
      job(2, "cancelled", [1]),
      job(3, "cancelled", [2]),
      job(4, "success"),
    ]);
    expect(plan.rerun).toEqual([1, 2, 3]);
    expect(plan.pinned).toEqual([
      { jobIndex: 0, from: { runId: "parent", jobId: "job-0" } },
      { jobIndex: 4, from: { runId: "parent", jobId: "job-4" } },
    ]);
  });

  it("reruns a success that depends on a rerun job, and every failure kind", () => {
    const plan = planRerun("p", [
      job(0, "timed_out"),
      job(1, "success", [0]),
      job(2, "cancelled"),
      job(3, "platform_failure"),
      job(4, "blocked_by_policy"),
      job(5, "success"),
    ]);
    expect(plan.rerun).toEqual([0, 1, 2, 3, 4]);
    expect(plan.pinned.map((p) => p.jobIndex)).toEqual([5]);
  });

  it("points a pin at the original producer when the parent had reused it", () => {
    const plan = planRerun("second", [
      job(0, "success", [], { runId: "first", jobId: "orig-0" }),
      job(1, "user_failure", [0]),
    ]);
    expect(plan.pinned).toEqual([{ jobIndex: 0, from: { runId: "first", jobId: "orig-0" } }]);
  });

  it("refuses a run that has nothing to re-run", () => {
    expect(() => planRerun("p", [job(0, "success"), job(1, "success", [0])])).toThrow(
      expect.objectContaining({ code: "RUN.NOTHING_TO_RERUN" }),
    );
  });
});
