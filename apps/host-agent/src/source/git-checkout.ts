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
  type GitHttpAuth,
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

/**
 * The forge refused to serve the repository: no credential for a private repo, or the repo's
 * credential (its sealed forge token, or the App installation's access) was refused. The repo's
 * configuration is at fault, not this host: no retry on another host would succeed.
 */
export class SourceAuthError extends Error {
  override name = "SourceAuthError";
  readonly code = "SOURCE.AUTH_REFUSED";
}

/**
 * A short-lived credential for the repo's own forge (docs/adr/0028, amended by issue 28). It only
 * ever lives in this process and in the environment of the git fetch that uses it.
 */
export interface SourceCredential {
  username: string;
  password: string;
  /** Whose credential it is (the repo's id): host mirrors fetched with it are that repo's alone. */
  scope: string;
}

// What git says when the server answers 401/403 and it has no (other) way to authenticate.
const AUTH_REFUSED =
  /could not read Username|Authentication failed|terminal prompts disabled|returned error: 40[13]|HTTP 40[13]/i;

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
  /** The repo's forge credential for an https fetch, when it has one; never reaches the workspace. */
  credential?: SourceCredential | null;
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
  // Only for http(s): a file:// URL never needs one, and git gets nothing it does not need.
  const auth: GitHttpAuth | undefined =
    spec.credential && remote.protocol !== "file"
      ? { url: remote.url, username: spec.credential.username, password: spec.credential.password }
      : undefined;
  const scope = auth ? spec.credential!.scope : null;
  const [from, config, protocol, fetchAuth]: [string, string[], GitProtocol, GitHttpAuth | undefined] = spec.mirrorDir
    ? [await mirrorWithCommit(spec.mirrorDir, remote, spec.commitSha, signal, auth, scope), [], "file", undefined]
    : [remote.url, remote.gitConfig, remote.protocol, auth];
  // No template: git's sample hooks and description are copied on every init otherwise, and
  // were a third of a warm checkout's time here (docs/benchmarks.md).
  await git("init", ["init", "-q", "--template=", spec.dir], signal);
  await git(
    "fetch",
    [...config, "-C", spec.dir, "fetch", "-q", "--depth", "1", "--", from, spec.commitSha],
    signal,
    protocol,
    fetchAuth,
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
  auth: GitHttpAuth | undefined,
  scope: string | null,
): Promise<string> {
  // A mirror filled with a repo's credential is that repo's alone: another repo (another org) that
  // registers the same URL without the credential must not be served from it. Public fetches keep
  // sharing the URL's mirror.
  const key = scope === null ? remote.url : `${remote.url}\0credential:${scope}`;
  const dir = path.join(mirrorDir, `${createHash("sha256").update(key).digest("hex").slice(0, 32)}.git`);
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
      auth,
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

async function git(
  what: string,
  args: string[],
  signal: AbortSignal,
  protocol?: GitProtocol,
  httpAuth?: GitHttpAuth,
): Promise<void> {
  try {
    await runGit(args, {
      what,
      signal,
      protocols: protocol ? [protocol] : [],
      maxStdoutBytes: 64 * 1024,
      ...(httpAuth ? { httpAuth } : {}),
    });
  } catch (err) {
    if (err instanceof GitError) {
      if (protocol && protocol !== "file" && AUTH_REFUSED.test(err.stderr))
        throw new SourceAuthError(
          httpAuth
            ? `the forge refused the repository's credential (its forge token or App installation): ${err.message}`
            : `the forge asks for a credential and the repository has none (set a forge token or install the GitHub App): ${err.message}`,
        );
      throw new CheckoutError(err.message);
    }
    throw err;
  }
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
