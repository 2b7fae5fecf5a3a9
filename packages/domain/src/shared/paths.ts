// Lexical path rules applied by workflow parsing, artifacts and caches alike, so no one capability owns
// them. In workflow/ they would close a runtime import cycle: caches -> workflow -> caches (the workflow
// parser reads the cache kinds).

// Control characters (C0 and DEL) in user-supplied names and paths: NUL truncates in C APIs, the rest
// only hide tricks in logs and terminals. Matching them is the point, hence the rule exception.
// eslint-disable-next-line no-control-regex
export const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f]/;

/**
 * Artifact paths are resolved against the job workspace and cache paths against
 * the sandbox, so both are checked lexically here: the runner must never have to
 * guess what `a/../../etc` or `a//b` was meant to be.
 */
export function workspacePathProblem(path: string): string | null {
  if (path.startsWith("/")) return "must be relative to the workspace (no leading /)";
  return pathProblem(path);
}

/** Cache paths may be absolute because they name a location inside the sandbox. */
export function sandboxPathProblem(path: string): string | null {
  if (path === "/") return "must not be the filesystem root";
  return pathProblem(path.startsWith("/") ? path.slice(1) : path);
}

const MAX_PATH_LENGTH = 1024;

function pathProblem(path: string): string | null {
  if (path.length === 0) return "must not be empty";
  if (path.length > MAX_PATH_LENGTH) return `must be at most ${MAX_PATH_LENGTH} characters`;
  // NUL truncates paths in C APIs; other control characters only hide tricks.
  if (CONTROL_CHARACTERS.test(path)) return "must not contain control characters";
  if (path.includes("\\")) return "must use / as the separator";
  for (const segment of path.split("/")) {
    if (segment === "..") return "must not contain a .. segment";
    if (segment === "" || segment === ".") {
      return "must be normalised (no empty or . segments, no trailing /)";
    }
  }
  return null;
}
