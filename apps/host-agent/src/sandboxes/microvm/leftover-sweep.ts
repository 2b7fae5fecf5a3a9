// Removes what a crashed agent left in the driver's work dir: run directories carrying our marker,
// after killing the QEMUs named by their pidfiles (the VM's and its network helper's). A pid is only
// trusted when /proc says it is a QEMU whose command line mentions that very directory (pids are
// reused; the directory is in QEMU's -name).
import { readdir, readFile, rm } from "node:fs/promises";
import path from "node:path";
import { sleep } from "../../timing.ts";
import { RUN_DIR_MARKER } from "./vm-boot.ts";

export async function removeLeftoverVms(workDir: string, keep: ReadonlySet<string>): Promise<number> {
  let removed = 0;
  for (const entry of await readdir(workDir).catch(() => [] as string[])) {
    const runDir = path.join(workDir, entry);
    if (keep.has(runDir)) continue;
    const ours = await readFile(path.join(runDir, RUN_DIR_MARKER)).then(
      () => true,
      () => false,
    );
    if (!ours) continue;
    await killQemuOf(runDir, "qemu.pid");
    await killQemuOf(runDir, "net.pid");
    await rm(runDir, { recursive: true, force: true, maxRetries: 3 });
    removed++;
  }
  return removed;
}

async function killQemuOf(runDir: string, pidFile: string): Promise<void> {
  const pid = Number((await readFile(path.join(runDir, pidFile), "utf8").catch(() => "")).trim());
  if (!Number.isSafeInteger(pid) || pid <= 1) return;
  const cmdline = (await readFile(`/proc/${pid}/cmdline`, "utf8").catch(() => "")).split("\0");
  if (!cmdline[0]?.includes("qemu-system") || !cmdline.some((a) => a.includes(runDir))) return;
  try {
    process.kill(pid, "SIGKILL");
  } catch {
    return;
  }
  for (let i = 0; i < 100; i++) {
    // Gone, or a zombie (empty cmdline) waiting for init to reap it: either way no longer running.
    if ((await readFile(`/proc/${pid}/cmdline`).catch(() => Buffer.alloc(0))).length === 0) return;
    await sleep(20);
  }
}
