// Puts the commit under test into the (still empty) workspace. Runs as the agent, outside the
// sandbox, before any user code: `git init` + shallow fetch of exactly one commit + checkout.
// The clone URL is checked against the source policy first (docs/adr/0017: https to public
// addresses; file:// and loopback only when the operator enabled local repositories), and git runs
// through @kiln/oci's runGit: a minimal environment (no agent token, no user/system git config), no
// prompts, no redirects, DNS pinned to the checked addresses, only the URL's own transport.
import { createHash } from "node:crypto";
import { mkdir, stat } from "node:fs/promises";
import path from "node:path";
import {
  GitError,
  isCloneUrlError,
  prepareCloneUrl,
  runGit,
  type GitProtocol,
  type PreparedCloneUrl,
  type SourcePolicy,
} from "@kiln/oci";

const CHECKOUT_TIMEOUT_MS = 10 * 60_000;

class CheckoutError extends Error {
  override name = "CheckoutError";
}

export interface CheckoutSpec {
  dir: string;
  cloneUrl: string;
  commitSha: string;
  /** KILN_LOCAL_REPOS_ROOT on this host: which clone URLs git may fetch from. */
  source: SourcePolicy;
  signal?: AbortSignal;
  timeoutMs?: number;
  /**
   * A host-local cache of bare mirrors, one per clone URL (credentials included in the key, so
   * access is exactly the URL's). The forge is asked for a commit once per host; every later
   * checkout of it is a local fetch. Agent-owned, outside every sandbox: no job can write to it.
   */
  mirrorDir?: string;
}

/**
 * Throws CloneUrlError (from @kiln/oci, with a SOURCE.* code) when the URL is refused: the repo's
 * registration is at fault, not this host. Other failures are CheckoutErrors with redacted text.
 */
export async function checkoutSource(spec: CheckoutSpec): Promise<void> {
  if (!/^[0-9a-f]{7,64}$/i.test(spec.commitSha))
    throw new CheckoutError(`invalid commit sha ${JSON.stringify(spec.commitSha.slice(0, 80))}`);
  // Also refuses anything git could read as an option (a leading dash).
  const remote = await prepareCloneUrl(spec.cloneUrl, spec.source).catch((err: unknown) => {
    if (isCloneUrlError(err)) throw err;
    throw new CheckoutError(`cannot reach the clone URL's host: ${errorText(err)}`);
  });
  const timeout = AbortSignal.timeout(spec.timeoutMs ?? CHECKOUT_TIMEOUT_MS);
  const signal = spec.signal ? AbortSignal.any([spec.signal, timeout]) : timeout;
  // From the mirror, the workspace fetch is a local one: only the file transport, no remote config.
  const [from, config, protocol]: [string, string[], GitProtocol] = spec.mirrorDir
    ? [await mirrorWithCommit(spec.mirrorDir, remote, spec.commitSha, signal), [], "file"]
    : [remote.url, remote.gitConfig, remote.protocol];
  // No template: git's sample hooks and description are copied on every init otherwise, and
  // were a third of a warm checkout's time here (docs/benchmarks.md).
  await git("init", ["init", "-q", "--template=", spec.dir], signal);
  await git(
    "fetch",
    [...config, "-C", spec.dir, "fetch", "-q", "--depth", "1", "--", from, spec.commitSha],
    signal,
    protocol,
  );
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
  remote: PreparedCloneUrl,
  sha: string,
  signal: AbortSignal,
): Promise<string> {
  const dir = path.join(mirrorDir, `${createHash("sha256").update(remote.url).digest("hex").slice(0, 32)}.git`);
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
      [
        ...remote.gitConfig,
        "--git-dir",
        dir,
        "fetch",
        "-q",
        "--depth",
        "1",
        "--",
        remote.url,
        `+${sha}:refs/kiln/${sha}`,
      ],
      signal,
      remote.protocol,
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

async function git(what: string, args: string[], signal: AbortSignal, protocol?: GitProtocol): Promise<void> {
  try {
    await runGit(args, { what, signal, protocols: protocol ? [protocol] : [], maxStdoutBytes: 64 * 1024 });
  } catch (err) {
    if (err instanceof GitError) throw new CheckoutError(err.message);
    throw err;
  }
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
