import type { Outcome } from "./outcomes.ts";

export interface JobNode {
  jobIndex: number;
  needs: readonly number[];
  status: "pending" | "ready" | "running" | "completed";
  outcome: Outcome | null;
  /** The expansions of one matrix job share a group; maxParallel bounds its READY + running. */
  group?: { key: string; maxParallel: number | null } | null;
}

/** How many more of each group may become READY now (groups without a limit are absent). */
function groupBudgets(jobs: Iterable<JobNode>): Map<string, number> {
  const budgets = new Map<string, number>();
  for (const j of jobs) {
    if (!j.group || j.group.maxParallel === null) continue;
    const key = j.group.key;
    const active = j.status === "ready" || j.status === "running" ? 1 : 0;
    budgets.set(key, (budgets.get(key) ?? j.group.maxParallel) - active);
  }
  return budgets;
}

/**
 * After one job finishes, which pending jobs become ready and which can never run.
 * A job is ready when every job it needs succeeded; it is skipped as soon as one of them ended
 * any other way, transitively (a skipped job's dependents are skipped in the same decision).
 * A matrix group with max_parallel never has more than that many expansions READY or running:
 * the rest stay pending and a later call (when a sibling finishes) lets the next one in, by index.
 */
export function advanceGraph(jobs: readonly JobNode[]): { ready: number[]; skipped: number[] } {
  const byIndex = new Map(jobs.map((j) => [j.jobIndex, { ...j }]));
  const budgets = groupBudgets(byIndex.values());
  const ready: number[] = [];
  const skipped: number[] = [];
  let changed = true;
  while (changed) {
    changed = false;
    for (const j of byIndex.values()) {
      if (j.status !== "pending") continue;
      const deps = j.needs.map((n) => byIndex.get(n));
      if (deps.some((d) => d && d.status === "completed" && d.outcome !== "success")) {
        j.status = "completed";
        j.outcome = "cancelled";
        skipped.push(j.jobIndex);
        changed = true;
      } else if (deps.every((d) => d && d.status === "completed" && d.outcome === "success")) {
        const key = j.group?.key;
        const left = key === undefined ? undefined : budgets.get(key);
        if (left !== undefined && key !== undefined) {
          if (left <= 0) continue;
          budgets.set(key, left - 1);
        }
        j.status = "ready";
        ready.push(j.jobIndex);
        changed = true;
      }
    }
  }
  return { ready: ready.sort((a, b) => a - b), skipped: skipped.sort((a, b) => a - b) };
}

/**
 * Jobs ready at freeze time: those that need nothing, within their matrix group's max_parallel.
 * The same rule as advanceGraph over a graph where nothing has started.
 */
export function initialReadyJobs(
  jobs: readonly { jobIndex: number; needs: readonly number[]; group?: JobNode["group"] }[],
): number[] {
  return advanceGraph(jobs.map((j) => ({ ...j, status: "pending", outcome: null }))).ready;
}

/**
 * Fail-fast (issue 20): once an expansion of a matrix job with fail_fast ends in a user failure,
 * its siblings that have not finished are cancelled. Returns their indices; the cancel itself is the
 * caller's (the same guarded transitions as a run cancel, with their own cause).
 */
export function failFastVictims(jobs: readonly (JobNode & { failFast?: boolean })[]): number[] {
  const failedGroups = new Set(
    jobs.filter((j) => j.group && j.failFast && j.outcome === "user_failure").map((j) => j.group?.key),
  );
  return jobs
    .filter((j) => j.group && failedGroups.has(j.group.key) && j.status !== "completed")
    .map((j) => j.jobIndex);
}

export function allJobsCompleted(jobs: readonly { status: string }[]): boolean {
  return jobs.every((j) => j.status === "completed");
}
