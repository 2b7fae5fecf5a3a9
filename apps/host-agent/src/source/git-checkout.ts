// Puts the commit under test into the (still empty) workspace. Runs as the agent, outside the
// sandbox, before any user code: `git init` + shallow fetch of exactly one commit + checkout.
// Git gets a clean environment too: no agent tokens, no user/system git config (credential
// helpers, url rewrites), no prompts, and only ordinary transports (never `ext::`).
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdir, stat } from "node:fs/promises";
import path from "node:path";
import { redactUrlCredentials } from "@kiln/logger";

const GIT_ENV = {
  PATH: "/usr/local/bin:/usr/bin:/bin",
  HOME: "/nonexistent",
  LC_ALL: "C",
  GIT_TERMINAL_PROMPT: "0",
  GIT_CONFIG_NOSYSTEM: "1",
  GIT_CONFIG_GLOBAL: "/dev/null",
  GIT_ALLOW_PROTOCOL: "http:https:ssh:git:file",
};
const STDERR_KEEP_BYTES = 2_000;
const CHECKOUT_TIMEOUT_MS = 10 * 60_000;

export class CheckoutError extends Error {
  override name = "CheckoutError";
}

export interface CheckoutSpec {
  dir: string;
  cloneUrl: string;
  commitSha: string;
  signal?: AbortSignal;
  timeoutMs?: number;
  /**
   * A host-local cache of bare mirrors, one per clone URL (credentials included in the key, so
   * access is exactly the URL's). The forge is asked for a commit once per host; every later
   * checkout of it is a local fetch. Agent-owned, outside every sandbox: no job can write to it.
   */
  mirrorDir?: string;
}

export async function checkoutSource(spec: CheckoutSpec): Promise<void> {
  // Both values end up as git arguments: refuse anything git could read as an option.
  if (spec.cloneUrl.startsWith("-") || spec.cloneUrl.length === 0) throw new CheckoutError("invalid clone URL");
  if (!/^[0-9a-f]{7,64}$/i.test(spec.commitSha))
    throw new CheckoutError(`invalid commit sha ${JSON.stringify(spec.commitSha.slice(0, 80))}`);
  const timeout = AbortSignal.timeout(spec.timeoutMs ?? CHECKOUT_TIMEOUT_MS);
  const signal = spec.signal ? AbortSignal.any([spec.signal, timeout]) : timeout;
  const source = spec.mirrorDir
    ? await mirrorWithCommit(spec.mirrorDir, spec.cloneUrl, spec.commitSha, signal)
    : spec.cloneUrl;
  // No template: git's sample hooks and description are copied on every init otherwise, and
  // were a third of a warm checkout's time here (docs/benchmarks.md).
  await git("init", ["init", "-q", "--template=", spec.dir], signal);
  await git("fetch", ["-C", spec.dir, "fetch", "-q", "--depth", "1", "--", source, spec.commitSha], signal);
  await git("checkout", ["-C", spec.dir, "checkout", "-q", "FETCH_HEAD"], signal);
}

// One fetch at a time per mirror in this agent: git refuses a second concurrent shallow fetch into
// one repository (shallow.lock) rather than waiting for it.
const mirrorQueues = new Map<string, Promise<unknown>>();
const mirrored = new Set<string>();

function remember(key: string): void {
  if (mirrored.size >= 50_000) mirrored.clear();
  mirrored.add(key);
}

async function mirrorWithCommit(
  mirrorDir: string,
  cloneUrl: string,
  sha: string,
  signal: AbortSignal,
): Promise<string> {
  const dir = path.join(mirrorDir, `${createHash("sha256").update(cloneUrl).digest("hex").slice(0, 32)}.git`);
  // A commit this process put into (or found in) the mirror stays there: no mirror is ever pruned
  // while the agent runs, so one git process per checkout is saved.
  const known = `${dir}\0${sha}`;
  if (mirrored.has(known)) return dir;
  const has = () =>
    git("cat-file", ["--git-dir", dir, "cat-file", "-e", `${sha}^{commit}`], signal).then(
      () => true,
      () => false,
    );
  if (
    await stat(path.join(dir, "HEAD")).then(
      () => has(),
      () => false,
    )
  ) {
    remember(known);
    return dir;
  }
  const prev = mirrorQueues.get(dir) ?? Promise.resolve();
  const run = prev.then(async () => {
    if (
      !(await stat(path.join(dir, "HEAD")).then(
        () => true,
        () => false,
      ))
    ) {
      await mkdir(dir, { recursive: true, mode: 0o700 });
      await git("init", ["init", "-q", "--bare", "--template=", dir], signal);
      // Workspaces fetch one commit by id from here.
      await git("config", ["--git-dir", dir, "config", "uploadpack.allowAnySHA1InWant", "true"], signal);
    }
    if (await has()) return;
    // Kept under a ref of its own so the mirror's housekeeping never prunes it.
    await git(
      "fetch",
      ["--git-dir", dir, "fetch", "-q", "--depth", "1", "--", cloneUrl, `+${sha}:refs/kiln/${sha}`],
      signal,
    );
  });
  const tail = run.then(
    () => undefined,
    () => undefined,
  );
  mirrorQueues.set(dir, tail);
  void tail.then(() => {
    if (mirrorQueues.get(dir) === tail) mirrorQueues.delete(dir);
  });
  await run;
  remember(known);
  return dir;
}

function git(what: string, args: string[], signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(new CheckoutError("checkout aborted"));
    // Own process group so an abort also stops git's helpers (git-remote-https, ...).
    const child = spawn("git", args, { env: GIT_ENV, detached: true, stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => {
      stderr = (stderr + chunk.toString("utf8")).slice(-STDERR_KEEP_BYTES);
    });
    const onAbort = (): void => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL");
      } catch {
        // already exited
      }
    };
    signal.addEventListener("abort", onAbort, { once: true });
    child.once("error", (err) => {
      signal.removeEventListener("abort", onAbort);
      reject(new CheckoutError(`cannot run git: ${err.message}`));
    });
    child.once("close", (code, sig) => {
      signal.removeEventListener("abort", onAbort);
      if (code === 0) return resolve();
      const why = signal.aborted
        ? timedOut(signal)
          ? "timed out"
          : "aborted"
        : sig
          ? `killed by ${sig}`
          : `exited with code ${code}`;
      const detail = redactUrlCredentials(stderr.trim());
      reject(new CheckoutError(`git ${what} ${why}${detail ? `: ${detail}` : ""}`));
    });
  });
}

function timedOut(signal: AbortSignal): boolean {
  const reason: unknown = signal.reason;
  return reason instanceof Error && reason.name === "TimeoutError";
}
