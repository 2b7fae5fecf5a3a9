// Where an artifact may come from and go to, decided on paths the agent has already resolved
// (realpath, lstat). The agent does the I/O; these functions only compare strings, so the rules are
// testable without a filesystem. Paths use "/" and are absolute.
import type { ArtifactCause } from "./artifact-rules.ts";
import { workspacePathProblem } from "../shared/paths.ts";

export type SourceKind = "file" | "directory" | "symlink" | "other" | "missing";

/** True when `candidate` is `root` itself or lies below it. Both must be normalised absolute paths. */
export function pathIsWithin(root: string, candidate: string): boolean {
  const r = root.endsWith("/") ? root.slice(0, -1) : root;
  return candidate === r || candidate.startsWith(`${r}/`);
}

/** Lexical check of the declared path (the parser already ran it; the agent checks again). */
export function declaredPathCause(relative: string): ArtifactCause | null {
  return workspacePathProblem(relative) === null ? null : "artifact.path_outside_workspace";
}

/**
 * Classifies a publish source. `lexical` is workspace + declared path; `real` its realpath (null when
 * it does not exist or a component is dangling); `kind` what lstat/stat of the real path found.
 */
export function publishSourceCause(s: {
  workspaceReal: string;
  lexical: string;
  real: string | null;
  lexicalIsSymlinkOrHasSymlinkParent: boolean;
  kind: SourceKind;
}): ArtifactCause | null {
  if (!pathIsWithin(s.workspaceReal, s.lexical)) return "artifact.path_outside_workspace";
  if (s.real === null) return s.lexicalIsSymlinkOrHasSymlinkParent ? "artifact.symlink_escape" : "artifact.missing";
  if (!pathIsWithin(s.workspaceReal, s.real)) return "artifact.symlink_escape";
  if (s.kind === "missing") return "artifact.missing";
  if (s.kind !== "file" && s.kind !== "directory") return "artifact.unsupported_type";
  return null;
}

/** A symlink inside a published directory must point inside that directory (or the tar would dangle or leak). */
export function linkInsideDirectory(dirReal: string, linkTargetResolved: string): boolean {
  return pathIsWithin(dirReal, linkTargetResolved);
}
