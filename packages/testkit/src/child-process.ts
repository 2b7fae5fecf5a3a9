// Small helpers shared by every launcher in this package: idempotent stop, a tail of a child's
// output for start-up errors, and stopping a child with a grace period.
import type { ChildProcess } from "node:child_process";

/** Makes `stop()` idempotent: the first call does the work, later calls share its promise. */
export function once(fn: () => Promise<void>): () => Promise<void> {
  let p: Promise<void> | undefined;
  return () => (p ??= fn());
}

/** Keeps the last lines of a child's output so start failures can say *why*. */
export function tailBuffer(max = 40) {
  const lines: string[] = [];
  return {
    push(chunk: string) {
      lines.push(...chunk.split("\n").filter(Boolean));
      lines.splice(0, Math.max(0, lines.length - max));
    },
    text: () => lines.join("\n"),
    clear: () => {
      lines.length = 0;
    },
  };
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** SIGTERM, then SIGKILL if the process has not exited within `graceMs`. */
export async function killChild(
  child: ChildProcess,
  signal: NodeJS.Signals = "SIGTERM",
  graceMs = 5000,
): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill(signal);
  const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
  await exited;
  clearTimeout(timer);
}
