// SHA-256 of each declared cache input as the pinned checkout has it, taken before any step runs
// (a step could rewrite the lock file afterwards). An absent file is part of the identity (null);
// a link or path leading outside the workspace, or anything but a regular file, disables the cache.
import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { lstat, realpath } from "node:fs/promises";
import path from "node:path";
import { cachePathProblem, pathIsWithin } from "@kiln/domain";
import type { InputDigest } from "./cache-context.ts";

export async function hashCacheInputs(
  workspaceDir: string,
  inputs: readonly string[],
): Promise<{ ok: true; digests: InputDigest[] } | { ok: false; reason: string }> {
  const workspaceReal = await realpath(workspaceDir);
  const digests: InputDigest[] = [];
  for (const input of inputs) {
    const problem = cachePathProblem(input);
    if (problem) return { ok: false, reason: `cache input ${JSON.stringify(input)} ${problem}` };
    const lexical = path.join(workspaceReal, input);
    if (!(await lstat(lexical).catch(() => null))) {
      // Only a genuinely absent file counts as absent: a dangling parent link is not.
      const parentReal = await realpath(path.dirname(lexical)).catch(() => null);
      if (parentReal !== null && !pathIsWithin(workspaceReal, parentReal))
        return { ok: false, reason: `cache input ${JSON.stringify(input)} leads outside the workspace` };
      digests.push({ path: input, sha256: null });
      continue;
    }
    const real = await realpath(lexical).catch(() => null);
    if (real === null || !pathIsWithin(workspaceReal, real))
      return { ok: false, reason: `cache input ${JSON.stringify(input)} leads outside the workspace` };
    const s = await lstat(real);
    if (!s.isFile()) return { ok: false, reason: `cache input ${JSON.stringify(input)} is not a regular file` };
    const h = createHash("sha256");
    for await (const c of createReadStream(real, { highWaterMark: 1024 * 1024 })) h.update(c as Buffer);
    digests.push({ path: input, sha256: h.digest("hex") });
  }
  return { ok: true, digests };
}
