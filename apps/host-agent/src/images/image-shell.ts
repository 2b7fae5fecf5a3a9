// Every step is `/bin/sh -c <command>` inside the job's image, on both drivers (issue 30). An image
// without a shell could never run a step: that is the image's fault, found before any sandbox
// exists and reported as the user's failure with its own cause, instead of every step failing to
// exec. Symlinks are followed the way the step's root will follow them: inside the rootfs, an
// absolute target from the rootfs's top, never out of it.
import { lstat, readlink } from "node:fs/promises";
import path from "node:path";

const SHELL = "/bin/sh";
// Linux gives up at 40 links in one lookup (ELOOP); so do we.
const MAX_LINKS = 40;

/** True when `/bin/sh` of the unpacked image at `rootfsDir` resolves to an executable regular file. */
export async function imageHasShell(rootfsDir: string): Promise<boolean> {
  let pending = SHELL.split("/").filter(Boolean);
  const resolved: string[] = [];
  let links = 0;
  while (pending.length > 0) {
    const part = pending.shift()!;
    if (part === ".") continue;
    if (part === "..") {
      resolved.pop();
      continue;
    }
    const abs = path.join(rootfsDir, ...resolved, part);
    const st = await lstat(abs).catch(() => null);
    if (!st) return false;
    if (st.isSymbolicLink()) {
      if (++links > MAX_LINKS) return false;
      const target = await readlink(abs);
      if (target.startsWith("/")) resolved.length = 0;
      pending = [...target.split("/").filter(Boolean), ...pending];
      continue;
    }
    if (pending.length > 0 && !st.isDirectory()) return false;
    if (pending.length === 0) return st.isFile() && (st.mode & 0o111) !== 0;
    resolved.push(part);
  }
  return false;
}
