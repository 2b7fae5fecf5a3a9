import type { Outcome } from "./outcomes.ts";

export interface JobNode {
  jobIndex: number;
  needs: readonly number[];
  status: "pending" | "ready" | "running" | "completed";
  outcome: Outcome | null;
}

/**
 * After one job finishes, which pending jobs become ready and which can never run.
 * A job is ready when every job it needs succeeded; it is skipped as soon as one of them ended
 * any other way, transitively (a skipped job's dependents are skipped in the same decision).
 */
export function advanceGraph(jobs: readonly JobNode[]): { ready: number[]; skipped: number[] } {
  const byIndex = new Map(jobs.map((j) => [j.jobIndex, { ...j }]));
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
        j.status = "ready";
        ready.push(j.jobIndex);
        changed = true;
      }
    }
  }
  return { ready: ready.sort((a, b) => a - b), skipped: skipped.sort((a, b) => a - b) };
}

/** Jobs ready at freeze time: those that need nothing. */
export function initialReadyJobs(jobs: readonly { jobIndex: number; needs: readonly number[] }[]): number[] {
  return jobs.filter((j) => j.needs.length === 0).map((j) => j.jobIndex);
}

export function allJobsCompleted(jobs: readonly { status: string }[]): boolean {
  return jobs.every((j) => j.status === "completed");
}
