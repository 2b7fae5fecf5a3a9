import { existsSync, readdirSync, statSync } from "node:fs";
import path from "node:path";

/** Newest mtime under the given roots (skipping build output), to decide whether `next build` is stale. */
function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === "node_modules" || entry.name === ".next" || entry.name.startsWith(".turbo")) continue;
    const p = path.join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(p) : statSync(p).mtimeMs);
  }
  return newest;
}

export function webBuildIsStale(root: string): boolean {
  const buildId = path.join(root, "apps/web/.next/BUILD_ID");
  if (!existsSync(buildId)) return true;
  const built = statSync(buildId).mtimeMs;
  const sources = [
    "apps/web/src",
    "apps/web/next.config.ts",
    "packages/domain/src",
    "packages/engine/src",
    "packages/db/src",
    "packages/oci/src",
    "packages/ui/src",
  ]
    .map((p) => path.join(root, p))
    .filter((p) => existsSync(p))
    .map((p) => (statSync(p).isDirectory() ? newestMtime(p) : statSync(p).mtimeMs));
  return Math.max(...sources) > built;
}
