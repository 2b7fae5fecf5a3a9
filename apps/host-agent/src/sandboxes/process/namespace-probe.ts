// Decides once, at startup, whether steps can run in their own Linux namespaces via util-linux
// `unshare`. The probe runs exactly the wrapper used for steps, so "probe passed" means "the wrapper
// works here" (containers and hardened kernels often forbid one of the namespaces).
import { execFile } from "node:child_process";
import { access, constants } from "node:fs/promises";
import path from "node:path";
import type { SandboxIsolation } from "../sandbox-driver.ts";
import { DEFAULT_SANDBOX_LIMITS, SANDBOX_HOST_STEP_ID, SANDBOX_STEP_ID } from "./private-view.ts";

const PROBE_PATH = "/usr/local/bin:/usr/bin:/bin";
const UNSHARE_CANDIDATES = ["/usr/bin/unshare", "/bin/unshare", "/usr/local/bin/unshare", "/usr/sbin/unshare"];
const SETPRIV_CANDIDATES = ["/usr/bin/setpriv", "/bin/setpriv", "/usr/local/bin/setpriv"];
const PROBE_TIMEOUT_MS = 5_000;

// pid: the step is pid 1 of its own namespace, so every descendant dies with it (--kill-child ties
// that to unshare's own death) and it cannot see or signal host processes (/proc is remounted);
// net: only a down loopback, no network; ipc/uts: no shared SysV IPC, own hostname.
const NAMESPACE_FLAGS = ["--pid", "--fork", "--kill-child", "--mount-proc", "--net", "--ipc", "--uts"];
// Without root, namespaces need a user namespace; the step then looks like root inside it but
// holds no privilege on the host.
const UNPRIVILEGED_FLAGS = ["--user", "--map-root-user"];

export type NamespaceSupport =
  | {
      available: true;
      unsharePath: string;
      /** unshare's flags for a step. */
      args: string[];
      /** setpriv's argv prefix that ties a step to the agent's life. */
      deathSignal: string[];
      /** util-linux setpriv: drops the step's privileges (private-view.ts). */
      setpriv: string;
      /** Root agent: the view maps the step's ids onto SANDBOX_HOST_ID_BASE (no newuidmap needed). */
      mapIds: boolean;
      isolation: SandboxIsolation;
    }
  | { available: false; reason: string; isolation: SandboxIsolation };

export async function probeNamespaces(isRoot = process.getuid?.() === 0): Promise<NamespaceSupport> {
  const unsharePath = await findExecutable(UNSHARE_CANDIDATES);
  if (!unsharePath) return unavailable("util-linux `unshare` not found");
  const flags = isRoot ? NAMESPACE_FLAGS : [...UNPRIVILEGED_FLAGS, ...NAMESPACE_FLAGS];
  // The agent's own death must take its steps along (an OOM-killed or SIGKILLed agent has no
  // watchdog left, while the control plane records the attempt stopped at its lease expiry):
  // `setpriv --pdeathsig KILL` makes the kernel SIGKILL `unshare` when the agent dies, and
  // --kill-child then takes the step's whole pid namespace with it.
  // setpriv also drops every privilege of the step: without it there is no hardened sandbox to offer.
  const setpriv = await findExecutable(SETPRIV_CANDIDATES);
  if (!setpriv) return unavailable("util-linux `setpriv` not found");
  const deathSignal = [setpriv, "--pdeathsig", "KILL", "--"];
  const [file, args] = tiedToAgent(deathSignal, unsharePath, [...flags, "--", "/bin/sh", "-c", "true"]);
  const result = await run(file, args);
  if (result !== null) return unavailable(`\`${path.basename(file)} ${args.join(" ")}\` failed: ${result}`);
  const who = isRoot
    ? `steps run as uid ${SANDBOX_STEP_ID} of their own user namespace (host uid ${SANDBOX_HOST_STEP_ID})`
    : "steps run as root of a user namespace mapped to the agent's uid (an unprivileged agent cannot map more)";
  const detail =
    `user,pid,net,ipc,uts,mount namespaces via unshare; ${who}; no capabilities, no_new_privs; ` +
    "pivot_root into a read-only tmpfs root (system directories, world-readable /etc, minimal /dev, own /proc), " +
    `the sandbox the only writable place; steps die with the agent (parent-death signal); limits: ${describeLimits()}`;
  return {
    available: true,
    unsharePath,
    args: flags,
    deathSignal,
    setpriv,
    mapIds: isRoot,
    isolation: { level: "namespaces", detail },
  };
}

/** `file argv...` run under setpriv's parent-death signal: [file, args] for spawn. */
export function tiedToAgent(deathSignal: string[], file: string, argv: string[]): [string, string[]] {
  const [setpriv, ...pre] = deathSignal as [string, ...string[]];
  return [setpriv, [...pre, file, ...argv]];
}

/**
 * The rlimits every namespaced step gets. The size's cgroup and work disk, where the host offers
 * them, are added to the detail by the driver (process-driver.ts, ADR 0041).
 */
function describeLimits(): string {
  return `rlimits (processes ${DEFAULT_SANDBOX_LIMITS.processes}, file size ${DEFAULT_SANDBOX_LIMITS.fileSizeBytes / 1024 ** 3} GiB, writable memory ${DEFAULT_SANDBOX_LIMITS.dataBytes / 1024 ** 3} GiB per process, no core dumps)`;
}

export function unavailable(reason: string): NamespaceSupport {
  return {
    available: false,
    reason,
    isolation: { level: "none", detail: `plain host processes in their own process group (${reason})` },
  };
}

async function findExecutable(candidates: string[]): Promise<string | null> {
  for (const candidate of candidates) {
    try {
      await access(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here; try the next location
    }
  }
  return null;
}

/** Null on exit 0, otherwise a short reason. */
function run(file: string, args: string[]): Promise<string | null> {
  return new Promise((resolve) => {
    execFile(file, args, { env: { PATH: PROBE_PATH }, timeout: PROBE_TIMEOUT_MS }, (err, _stdout, stderr) => {
      if (!err) return resolve(null);
      const text = String(stderr).trim().split("\n")[0] ?? "";
      resolve(text || err.message);
    });
  });
}
