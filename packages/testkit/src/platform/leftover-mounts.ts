// A host agent killed mid-job (the fault suites do it on purpose) leaves its sandboxes' work disks
// and their binds mounted under the platform's data dir (docs/adr/0041): a restarted agent sweeps
// its own, but a platform that is stopping has no agent left to do it, and fs.rm never returns on a
// tree with a mount in it. So the platform unmounts what lies under its data dir, deepest first.
import { execFile } from "node:child_process";
import { readFile } from "node:fs/promises";
import { promisify } from "node:util";

const run = promisify(execFile);

/** Mount points at or under `dir` (mountinfo's 5th field; octal escapes such as \040 decoded). */
async function mountsUnder(dir: string): Promise<string[]> {
  const text = await readFile("/proc/self/mountinfo", "utf8").catch(() => "");
  return text
    .split("\n")
    .map((l) =>
      (l.split(" ")[4] ?? "").replace(/\\([0-7]{3})/g, (_m, o: string) => String.fromCharCode(Number.parseInt(o, 8))),
    )
    .filter((p) => p === dir || p.startsWith(`${dir}/`))
    .sort((a, b) => b.length - a.length);
}

/** Lazily unmounts every mount under `dir` (a loop device mounted with -o loop is freed with it). */
export async function unmountUnder(dir: string): Promise<void> {
  for (const p of await mountsUnder(dir)) await run("/bin/umount", ["-l", p]).catch(() => undefined);
}
