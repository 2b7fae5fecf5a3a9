// The archive layout and its manifest (format 1). An archive is a gzip'd POSIX tar whose first
// member is MANIFEST_NAME; every other member lives under "<i>/", i being the index of the
// declared cache path it restores to. The manifest lists every member in archive order with its
// type, mode, size, SHA-256 (files) and target (symlinks). The agent extracts into a staging
// directory, checks each member against the manifest as it streams, and only after the archive
// digest matches the entry's does anything move to where a step can see it.
import { z } from "zod";
import { workspacePathProblem } from "../shared/paths.ts";

export const MANIFEST_NAME = "kiln-cache-manifest.json";
/** The manifest itself is bounded before it is parsed: it is read into memory. */
export const MAX_MANIFEST_BYTES = 64 * 1024 * 1024;

const sha256Hex = z.string().regex(/^[0-9a-f]{64}$/);

const cacheManifestEntry = z.discriminatedUnion("type", [
  z.object({ type: z.literal("dir"), path: z.string(), mode: z.number().int() }).strict(),
  z
    .object({
      type: z.literal("file"),
      path: z.string(),
      mode: z.number().int(),
      size: z.number().int().min(0),
      sha256: sha256Hex,
    })
    .strict(),
  z.object({ type: z.literal("symlink"), path: z.string(), target: z.string() }).strict(),
]);
export type CacheManifestEntry = z.infer<typeof cacheManifestEntry>;

export const cacheManifest = z
  .object({
    format: z.literal(1),
    paths: z.array(z.string()).min(1).max(256),
    entries: z.array(cacheManifestEntry),
  })
  .strict();
export type CacheManifest = z.infer<typeof cacheManifest>;

/** Setuid, setgid and sticky bits never come out of a cache: a mode carrying them is hostile. */
export function cacheModeProblem(mode: number): string | null {
  if (mode < 0 || mode > 0o7777) return "has an invalid mode";
  if (mode & 0o7000) return "carries setuid/setgid/sticky bits";
  return null;
}

/**
 * A member name is "<i>/<relative path>" (or "<i>" for the path's root directory) with i below
 * pathCount, no absolute path, no "..", no empty or "." segment. Returns the parts or a problem.
 */
export function parseCacheMemberName(
  name: string,
  pathCount: number,
): { index: number; rel: string[] } | { problem: string } {
  if (name.includes("\0")) return { problem: "contains a NUL byte" };
  if (name.startsWith("/")) return { problem: "is an absolute path" };
  const trimmed = name.endsWith("/") ? name.slice(0, -1) : name;
  const parts = trimmed.split("/");
  if (parts.includes("..")) return { problem: "climbs out with .." };
  if (parts.some((p) => p === "" || p === ".")) return { problem: "is not normalised" };
  const head = parts[0]!;
  if (!/^(0|[1-9][0-9]{0,2})$/.test(head) || Number(head) >= pathCount)
    return { problem: "is outside every declared cache path" };
  return { index: Number(head), rel: parts.slice(1) };
}

/**
 * A symlink may only point somewhere inside its own cache path: relative, and never climbing above
 * that path's root from where the link sits. Absolute targets would mean a host path to the agent
 * and a sandbox path to the step; neither is inside the target, so both are refused.
 */
export function cacheSymlinkProblem(linkRel: readonly string[], target: string): string | null {
  if (target === "" || target.includes("\0")) return "has an empty or NUL target";
  if (target.startsWith("/")) return "points at an absolute path";
  let depth = linkRel.length - 1;
  for (const p of target.split("/")) {
    if (p === "..") depth--;
    else if (p !== "" && p !== ".") depth++;
    if (depth < 0) return "points outside the cache path";
  }
  return null;
}

/**
 * Cache paths are restored into and saved from the workspace. The parser accepts absolute sandbox
 * paths too; this version refuses them on the agent (they would name a host path under the process
 * driver), so such a cache is skipped with this reason rather than written somewhere unexpected.
 */
export function cachePathProblem(path: string): string | null {
  return workspacePathProblem(path);
}
