// Helpers for the shared SandboxDriver contract (sandbox-contract.ts): output capture and a
// process census that works for any driver (host processes of the process driver, QEMU of microvm).
import { readdir, readFile, readlink } from "node:fs/promises";
import type { Sandbox, StepResult } from "./sandbox-driver.ts";

const STEP_PATH_ENV = { PATH: "/usr/local/bin:/usr/bin:/bin" };

export interface Captured extends StepResult {
  stdout: Buffer;
  stderr: Buffer;
  out: string;
  err: string;
}

export async function runCaptured(
  sandbox: Sandbox,
  command: string,
  env: Record<string, string> = {},
  workingDirectory?: string,
): Promise<Captured> {
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  const result = await sandbox.runStep(
    command,
    { ...STEP_PATH_ENV, HOME: sandbox.paths.home, TMPDIR: sandbox.paths.tmp, ...env },
    workingDirectory === undefined ? {} : { workingDirectory },
    (c) => out.push(c),
    (c) => err.push(c),
  );
  const stdout = Buffer.concat(out);
  const stderr = Buffer.concat(err);
  return { ...result, stdout, stderr, out: stdout.toString("utf8"), err: stderr.toString("utf8") };
}

/**
 * Live (non-zombie) processes whose command line, working directory or environment mentions `dir`:
 * a step's processes (cwd/HOME under the sandbox) or a VM (its sockets and disks are there).
 */
export async function processesReferencing(dir: string): Promise<number[]> {
  const found: number[] = [];
  for (const entry of await readdir("/proc")) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    const base = `/proc/${entry}`;
    const stat = await readFile(`${base}/stat`, "utf8").catch(() => "");
    if (!stat || stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z")) continue;
    const cmdline = await readFile(`${base}/cmdline`, "utf8").catch(() => "");
    const environ = await readFile(`${base}/environ`, "utf8").catch(() => "");
    const cwd = await readlink(`${base}/cwd`).catch(() => "");
    if (cmdline.includes(dir) || environ.includes(dir) || cwd.startsWith(dir)) found.push(Number(entry));
  }
  return found;
}

export async function waitForNoProcesses(dir: string, timeoutMs = 10_000): Promise<number[]> {
  const deadline = Date.now() + timeoutMs;
  let left = await processesReferencing(dir);
  while (left.length > 0 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100));
    left = await processesReferencing(dir);
  }
  return left;
}

/** Every byte value, twice, as the expected output of the binary-safety case. */
export const ALL_BYTES = Buffer.concat([
  Buffer.from(Array.from({ length: 256 }, (_, i) => i)),
  Buffer.from(Array.from({ length: 256 }, (_, i) => 255 - i)),
]);

/** A printf-format string that writes ALL_BYTES (octal escapes; portable across sh and busybox). */
export const ALL_BYTES_PRINTF = [...ALL_BYTES].map((b) => `\\${b.toString(8).padStart(3, "0")}`).join("");
