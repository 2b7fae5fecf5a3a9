import { quote } from "./errors.ts";
import type { JobDraft } from "./read-job.ts";
import { label, type Reader } from "./reader.ts";

/**
 * Turns `needs` names into indices, then rejects cycles and restores that read
 * from a job which is not guaranteed to have finished first. Recursion below is
 * bounded by maxJobs, so it cannot exhaust the stack.
 */
export function resolveDependencies(reader: Reader, drafts: readonly JobDraft[]): void {
  const indexByName = new Map<string, number>();
  for (const { job } of drafts) indexByName.set(job.name, job.index);

  for (const draft of drafts) {
    const { job } = draft;
    if (draft.needs === null) {
      job.needs = job.index > 0 ? [job.index - 1] : [];
      continue;
    }
    job.needs = draft.needs.map(({ name, at }) => {
      const target = indexByName.get(name);
      if (target === undefined) return reader.fail(at, `${label(at)} names unknown job ${quote(name)}`);
      if (target === job.index) return reader.fail(at, `${label(at)}: job ${quote(name)} cannot need itself`);
      return target;
    });
  }

  rejectCycles(reader, drafts);
  checkRestores(reader, drafts, indexByName);
}

function rejectCycles(reader: Reader, drafts: readonly JobDraft[]): void {
  const NEW = 0;
  const ACTIVE = 1;
  const DONE = 2;
  const state: number[] = drafts.map(() => NEW);
  const active: number[] = [];

  const visit = (index: number): void => {
    state[index] = ACTIVE;
    active.push(index);
    for (const target of jobAt(drafts, index).job.needs) {
      if (state[target] === ACTIVE) reportCycle(reader, drafts, active.slice(active.indexOf(target)), index);
      if (state[target] === NEW) visit(target);
    }
    active.pop();
    state[index] = DONE;
  };
  drafts.forEach((_, index) => {
    if (state[index] === NEW) visit(index);
  });
}

function reportCycle(reader: Reader, drafts: readonly JobDraft[], cycle: number[], closedBy: number): never {
  const names = [...cycle, cycle[0] ?? closedBy].map((index) => jobAt(drafts, index).job.name);
  const closing = jobAt(drafts, closedBy);
  const implicit = cycle.some((index) => jobAt(drafts, index).needs === null);
  const hint = implicit ? "; a job without `needs` depends on the job before it" : "";
  const at = closing.needsAt ?? closing.nameAt;
  return reader.fail(at, `${label(at)}: jobs form a dependency cycle: ${names.join(" -> ")}${hint}`);
}

function checkRestores(reader: Reader, drafts: readonly JobDraft[], indexByName: ReadonlyMap<string, number>): void {
  const ancestors = ancestorSets(drafts);
  for (const { job, restoreSites } of drafts) {
    for (const site of restoreSites) {
      const from = indexByName.get(site.fromJob);
      const at = site.fromAt;
      if (from === undefined) reader.fail(at, `${label(at)} names unknown job ${quote(site.fromJob)}`);
      if (from === job.index) {
        reader.fail(at, `${label(at)}: job ${quote(job.name)} cannot restore artifacts from itself`);
      }
      if (!ancestors[job.index]?.has(from)) {
        reader.fail(
          at,
          `${label(at)}: job ${quote(job.name)} restores from ${quote(site.fromJob)} but does not depend on it (add it to needs)`,
        );
      }
      const published = jobAt(drafts, from).job.artifacts.publish;
      if (!published.some((artifact) => artifact.name === site.name)) {
        reader.fail(
          at,
          `${label(at)}: job ${quote(job.name)} restores artifact ${quote(site.name)} from ${quote(site.fromJob)}, which does not publish it`,
        );
      }
    }
  }
}

/** Only valid once cycles are ruled out; memoised so the cost stays O(jobs^2). */
function ancestorSets(drafts: readonly JobDraft[]): Set<number>[] {
  const memo: (Set<number> | undefined)[] = [];
  const ancestorsOf = (index: number): Set<number> => {
    const cached = memo[index];
    if (cached) return cached;
    const result = new Set<number>();
    for (const target of jobAt(drafts, index).job.needs) {
      result.add(target);
      for (const ancestor of ancestorsOf(target)) result.add(ancestor);
    }
    memo[index] = result;
    return result;
  };
  return drafts.map((_, index) => ancestorsOf(index));
}

function jobAt(drafts: readonly JobDraft[], index: number): JobDraft {
  const draft = drafts[index];
  if (!draft) throw new Error(`no job at index ${index}`);
  return draft;
}
