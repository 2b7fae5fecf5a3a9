// Finds host processes that belong to a sandbox directory but escaped its process group (for
// example via `setsid cmd &`). Only needed without a pid namespace: with one, the namespace's
// death takes every descendant with it. Best effort: a process that both leaves the group and
// changes its cwd out of the sandbox is not found, which is why isolation "none" is for trusted
// jobs only.
import { readdir, readlink } from "node:fs/promises";

export async function killProcessesUnder(dir: string, signal: NodeJS.Signals = "SIGKILL"): Promise<number> {
  let entries: string[];
  try {
    entries = await readdir("/proc");
  } catch {
    return 0; // no procfs (not Linux): nothing we can do here
  }
  let killed = 0;
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    if (pid === process.pid) continue;
    let cwd: string;
    try {
      cwd = await readlink(`/proc/${pid}/cwd`);
    } catch {
      continue; // exited meanwhile, or another user's process
    }
    if (cwd !== dir && !cwd.startsWith(`${dir}/`)) continue;
    try {
      process.kill(pid, signal);
      killed++;
    } catch {
      // already gone
    }
  }
  return killed;
}
