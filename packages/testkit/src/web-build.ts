// Whether apps/web's production build (`next build`) is older than its sources, and rebuilding it.
// Every harness runs the production server (`next start`), never `next dev`.
import { spawn } from "node:child_process";
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

/** Runs `next build` in apps/web when the build is missing or older than its sources. */
export async function buildWebIfStale(root: string, env: NodeJS.ProcessEnv, log: (m: string) => void): Promise<void> {
  if (!webBuildIsStale(root)) return;
  log("building the web app (next build)");
  await new Promise<void>((resolve, reject) => {
    const child = spawn(path.join(root, "node_modules/.bin/next"), ["build"], {
      cwd: path.join(root, "apps/web"),
      env,
      stdio: "inherit",
    });
    child.on("error", reject);
    child.on("exit", (code) => (code === 0 ? resolve() : reject(new Error(`next build exited with ${code}`))));
  });
}
