// Moves what the agent staged into a sandbox's workspace. A rename is atomic and free, but Linux
// refuses it (EXDEV) between two mounts, even of one filesystem: a process sandbox's workspace is a
// bind mount of its work disk (ADR 0041), so staging on any other mount cannot be renamed into it.
// Then the tree is copied (symlinks as symlinks, never followed; nothing overwritten) and the staged
// copy removed. Only called before any step of the job runs, so nothing races the copy.
import { cp, rename, rm } from "node:fs/promises";

export async function moveInto(staged: string, target: string): Promise<void> {
  try {
    await rename(staged, target);
    return;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EXDEV") throw err;
  }
  await cp(staged, target, {
    recursive: true,
    verbatimSymlinks: true,
    errorOnExist: true,
    force: false,
    preserveTimestamps: true,
  });
  await rm(staged, { recursive: true, force: true });
}
