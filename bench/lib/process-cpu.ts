// CPU time of a process tree from /proc (Linux): the process's own user+system time, what its
// reaped children used (cutime/cstime), and its live descendants'. A delta of two readings is the
// CPU a workload cost that tree, whatever else the machine was doing: unlike wall time it is not
// inflated by other processes competing for the cores (issue 32's per-job profile).
import { readdirSync, readFileSync } from "node:fs";
import { execFileSync } from "node:child_process";

const TICKS_PER_S = Number(execFileSync("getconf", ["CLK_TCK"]).toString().trim()) || 100;

interface Stat {
  ppid: number;
  /** utime + stime, ms */
  own: number;
  /** cutime + cstime: children this process has waited for, ms */
  reaped: number;
}

function readStat(pid: number): Stat | null {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return null; // gone meanwhile
  }
  // The command name (field 2) may hold spaces and parentheses: split after its closing paren.
  const f = text.slice(text.lastIndexOf(")") + 2).split(" ");
  const n = (i: number) => Number(f[i - 3]);
  return { ppid: n(4), own: ((n(14) + n(15)) * 1000) / TICKS_PER_S, reaped: ((n(16) + n(17)) * 1000) / TICKS_PER_S };
}

function allStats(): Map<number, Stat> {
  const out = new Map<number, Stat>();
  for (const name of readdirSync("/proc")) {
    const pid = Number(name);
    if (!Number.isInteger(pid)) continue;
    const s = readStat(pid);
    if (s) out.set(pid, s);
  }
  return out;
}

export interface TreeCpu {
  /** the root process alone, ms */
  own: number;
  /** the root and every descendant, live or reaped, ms */
  tree: number;
}

/** CPU used so far by each named process tree. */
export function readTreeCpu(roots: Record<string, number>): Record<string, TreeCpu> {
  const stats = allStats();
  const children = new Map<number, number[]>();
  for (const [pid, s] of stats) children.set(s.ppid, [...(children.get(s.ppid) ?? []), pid]);
  const treeOf = (pid: number): number => {
    const s = stats.get(pid);
    if (!s) return 0;
    return s.own + s.reaped + (children.get(pid) ?? []).reduce((sum, c) => sum + treeOf(c), 0);
  };
  const out: Record<string, TreeCpu> = {};
  for (const [name, pid] of Object.entries(roots)) out[name] = { own: stats.get(pid)?.own ?? 0, tree: treeOf(pid) };
  return out;
}
