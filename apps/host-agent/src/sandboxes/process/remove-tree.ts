// `rm -rf` that also copes with read-only directories a build left behind (Go's module cache,
// `chmod -R a-w` tests), which plain fs.rm cannot delete as a non-root user.
import { chmod, lstat, readdir, rm } from "node:fs/promises";
import path from "node:path";

export async function removeTree(dir: string): Promise<void> {
  try {
    await rm(dir, { recursive: true, force: true, maxRetries: 3, retryDelay: 50 });
    return;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== "EACCES" && code !== "EPERM") throw err;
  }
  await makeWritable(dir);
  await rm(dir, { recursive: true, force: true, maxRetries: 3, retryDelay: 50 });
}

async function makeWritable(dir: string): Promise<void> {
  const stat = await lstat(dir).catch(() => null);
  if (!stat?.isDirectory()) return; // never follow symlinks out of the sandbox
  await chmod(dir, 0o700).catch(() => undefined);
  const entries = await readdir(dir).catch(() => [] as string[]);
  for (const entry of entries) await makeWritable(path.join(dir, entry));
}
