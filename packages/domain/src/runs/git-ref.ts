// Git refs as runs carry them. A run's ref decides which trusted cache namespace it writes and
// reads (docs/adr/0014, "Caches by ref"), and a manual trigger names one that its commit must be
// reachable from. Pure: the engine asks git.

/** Branch names Kiln accepts: git's check-ref-format rules, minus the rarely used corners. */
export function isBranchName(name: string): boolean {
  return (
    name.length > 0 &&
    name.length <= 200 &&
    /^[A-Za-z0-9._/-]+$/.test(name) &&
    !name.startsWith("refs/") &&
    !name.startsWith("-") &&
    !name.startsWith("/") &&
    !name.endsWith("/") &&
    !name.endsWith(".") &&
    !name.endsWith(".lock") &&
    !name.includes("..") &&
    !name.includes("//") &&
    !name.split("/").some((c) => c.startsWith("."))
  );
}

/** `main` -> `refs/heads/main`. */
export function branchRef(branch: string): string {
  return `refs/heads/${branch}`;
}

/**
 * The full ref for what a trigger or forge named: `refs/heads/x` and `refs/tags/x` as given, a bare
 * branch name (a pull request's head.ref, a manual trigger's `ref: main`) as `refs/heads/<name>`.
 * Null when it is neither.
 */
export function fullRef(ref: string): string | null {
  const m = /^refs\/(heads|tags)\/(.+)$/.exec(ref);
  if (m) return m[2] !== undefined && isBranchName(m[2]) ? ref : null;
  if (ref.startsWith("refs/")) return null;
  return isBranchName(ref) ? branchRef(ref) : null;
}

/**
 * A pull request's run carries `refs/pull/<n>/head` as its ref (issue 28): never the head branch's
 * name, which the PR's author chooses (a fork's branch named `main` is not the project's main).
 */
export function pullRequestRef(number: number): string {
  return `refs/pull/${number}/head`;
}

export function isPullRequestRef(ref: string): boolean {
  return /^refs\/pull\/[1-9][0-9]{0,9}\/head$/.test(ref);
}

/**
 * The ref a run's caches are keyed by: a branch or tag as fullRef gives it, or a pull request's own
 * `refs/pull/<n>/head` (its entries never land under a branch's key).
 */
export function runCacheRef(ref: string): string | null {
  return isPullRequestRef(ref) ? ref : fullRef(ref);
}
