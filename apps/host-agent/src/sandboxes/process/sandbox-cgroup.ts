// Per-sandbox cgroups for the process driver (ADR 0041): every step of an attempt runs in the
// attempt's own cgroup, under the agent's own (delegation: the host's other cgroups are left
// alone), with the size's memory (memory.max / memory.limit_in_bytes), process count (pids.max)
// and CPU quota (cpu.max / cpu.cfs_quota_us). cgroup v2 when the host's unified hierarchy offers
// the three controllers, otherwise cgroup v1 hierarchies mounted per controller (this host's case).
// The kernel's own counters say afterwards whether a failed step ran into a limit.
import { mkdir, readFile, rmdir, writeFile } from "node:fs/promises";
import path from "node:path";
import type { SandboxLimit, SizeResources } from "@kiln/domain";
import { sleep } from "../../timing.ts";

const ROOT = "/sys/fs/cgroup";
type Controller = "memory" | "pids" | "cpu";
const CONTROLLERS: readonly Controller[] = ["memory", "pids", "cpu"];
const CPU_PERIOD_US = 100_000;

export interface CgroupHost {
  version: 1 | 2;
  /** The agent's own cgroup directory per controller (one shared directory under v2). */
  base: Record<Controller, string>;
}

/** Where the agent's cgroups are, or why the driver cannot use them (said in the isolation detail). */
export async function probeCgroups(): Promise<CgroupHost | { reason: string }> {
  if (process.getuid?.() !== 0) return { reason: "the agent is not root" };
  const own = parseProcCgroup(await readFile("/proc/self/cgroup", "utf8").catch(() => ""));
  const host = (await unified(own)) ?? (await perController(own));
  if (!host) return { reason: "no cgroup v2 with memory,pids,cpu nor cgroup v1 hierarchies for them" };
  // Proves we may create, limit and remove a child where sandboxes will go.
  const probe = await SandboxCgroup.create(host, `probe-${process.pid}`, {
    vcpus: 1,
    memoryMiB: 64,
    diskMiB: 0,
    maxProcesses: 16,
  }).catch((err: unknown) => err);
  if (probe instanceof SandboxCgroup) {
    await probe.remove();
    return host;
  }
  return { reason: `cgroups present but not usable: ${probe instanceof Error ? probe.message : String(probe)}` };
}

function parseProcCgroup(text: string): Map<string, string> {
  const m = new Map<string, string>();
  for (const line of text.split("\n")) {
    const [, controllers, p] = /^\d+:([^:]*):(.*)$/.exec(line) ?? [];
    if (controllers === undefined || p === undefined) continue;
    for (const c of controllers === "" ? [""] : controllers.split(",")) m.set(c, p);
  }
  return m;
}

async function unified(own: Map<string, string>): Promise<CgroupHost | null> {
  const p = own.get("");
  if (p === undefined) return null;
  const dir = path.join(ROOT, p);
  const offered = await readFile(path.join(dir, "cgroup.controllers"), "utf8").catch(() => "");
  if (!CONTROLLERS.every((c) => offered.split(/\s+/).includes(c))) return null;
  // Our children get the controllers; a v2 cgroup with processes of its own cannot hand them
  // down (no internal processes), and the write fails then: the driver falls back and says so.
  const ok = await writeFile(path.join(dir, "cgroup.subtree_control"), "+memory +pids +cpu").then(
    () => true,
    () => false,
  );
  return ok ? { version: 2, base: { memory: dir, pids: dir, cpu: dir } } : null;
}

async function perController(own: Map<string, string>): Promise<CgroupHost | null> {
  const base = {} as Record<Controller, string>;
  for (const c of CONTROLLERS) {
    const p = own.get(c);
    const mount = c === "cpu" ? ["cpu", "cpu,cpuacct"] : [c];
    let found: string | null = null;
    for (const m of mount) {
      const dir = path.join(ROOT, m, p ?? "/");
      if (
        p !== undefined &&
        (await readFile(path.join(dir, "cgroup.procs"), "utf8").then(
          () => true,
          () => false,
        ))
      )
        found = dir;
    }
    if (!found) return null;
    base[c] = found;
  }
  return { version: 1, base };
}

/** One attempt's cgroup (a directory per hierarchy). */
export class SandboxCgroup {
  private constructor(
    private readonly host: CgroupHost,
    private readonly dirs: Record<Controller, string>,
    private baseline: { oom: number; pids: number },
  ) {}

  static async create(host: CgroupHost, name: string, size: SizeResources): Promise<SandboxCgroup> {
    const dirs = Object.fromEntries(CONTROLLERS.map((c) => [c, path.join(host.base[c], `kiln-${name}`)])) as Record<
      Controller,
      string
    >;
    for (const d of new Set(Object.values(dirs))) await mkdir(d);
    const bytes = size.memoryMiB * 1024 * 1024;
    const quota = size.vcpus * CPU_PERIOD_US;
    if (host.version === 2) {
      await writeFile(path.join(dirs.memory, "memory.max"), String(bytes));
      // No swap for a job: past memory.max it is OOM-killed, not slowed to a crawl.
      await writeFile(path.join(dirs.memory, "memory.swap.max"), "0").catch(() => undefined);
      await writeFile(path.join(dirs.cpu, "cpu.max"), `${quota} ${CPU_PERIOD_US}`);
    } else {
      await writeFile(path.join(dirs.memory, "memory.limit_in_bytes"), String(bytes));
      await writeFile(path.join(dirs.cpu, "cpu.cfs_period_us"), String(CPU_PERIOD_US));
      await writeFile(path.join(dirs.cpu, "cpu.cfs_quota_us"), String(quota));
    }
    await writeFile(path.join(dirs.pids, "pids.max"), String(size.maxProcesses));
    const cg = new SandboxCgroup(host, dirs, { oom: 0, pids: 0 });
    await cg.mark();
    return cg;
  }

  /** Before each step: the counters `limitHit` compares against (one step's limits, not the job's). */
  async mark(): Promise<void> {
    this.baseline = { oom: await this.oomKills(), pids: await this.pidsRefused() };
  }

  /** Files a wrapper writes its own pid to before exec'ing the step (one per hierarchy). */
  get procsFiles(): string[] {
    return [...new Set(Object.values(this.dirs))].map((d) => path.join(d, "cgroup.procs"));
  }

  /**
   * `file args` started inside this cgroup: a root shell moves itself in, then execs. No step
   * process ever runs outside it (moving a pid after spawn would race with its first fork).
   */
  wrap(file: string, args: string[]): [string, string[]] {
    const script = 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"';
    return ["/bin/sh", ["-c", script, "kiln-cgroup", ...this.procsFiles, "--", file, ...args]];
  }

  /** The limit the step since `mark` ran into, if any (the kernel's counters). */
  async limitHit(): Promise<SandboxLimit | null> {
    if ((await this.oomKills()) > this.baseline.oom) return "oom";
    if ((await this.pidsRefused()) > this.baseline.pids) return "pids_exhausted";
    return null;
  }

  /** Kills what is left in it and removes it (the directories go only once they are empty). */
  async remove(): Promise<void> {
    for (let i = 0; i < 50; i++) {
      const pids = (await Promise.all(this.procsFiles.map((f) => readFile(f, "utf8").catch(() => ""))))
        .join("\n")
        .split("\n")
        .filter(Boolean)
        .map(Number);
      for (const pid of pids) {
        try {
          process.kill(pid, "SIGKILL");
        } catch {
          // already gone
        }
      }
      const left = await Promise.all(
        [...new Set(Object.values(this.dirs))].map((d) =>
          rmdir(d).then(
            () => false,
            (e: NodeJS.ErrnoException) => e.code !== "ENOENT",
          ),
        ),
      );
      if (!left.some(Boolean)) return;
      await sleep(100);
    }
  }

  private async oomKills(): Promise<number> {
    const file = this.host.version === 2 ? "memory.events" : "memory.oom_control";
    return counter(path.join(this.dirs.memory, file), "oom_kill");
  }

  private async pidsRefused(): Promise<number> {
    return counter(path.join(this.dirs.pids, "pids.events"), "max");
  }
}

async function counter(file: string, key: string): Promise<number> {
  const text = await readFile(file, "utf8").catch(() => "");
  const m = new RegExp(`^${key} (\\d+)$`, "m").exec(text);
  return m ? Number(m[1]) : 0;
}
