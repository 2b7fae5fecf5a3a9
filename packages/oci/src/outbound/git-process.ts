// The one way Kiln runs git against a tenant's repository (workers: the workflow file at freeze;
// agents: the checkout). Git gets a minimal environment: it is a network client acting on a URL a
// tenant chose, so it must not inherit DATABASE_URL, job-token keys, agent tokens or cloud
// credentials (a credential helper, an ssh command, a proxy or a hook would hand them on), nor the
// host's git configuration (url rewrites, credential helpers). Transports are limited per call to
// the one the checked URL needs (GIT_ALLOW_PROTOCOL), and stderr is redacted before anyone sees it.
import { spawn } from "node:child_process";
import { redactCredentials, type GitProtocol } from "./clone-url.ts";

const STDERR_KEEP_BYTES = 2_000;

/** The child's whole environment; nothing of the parent's is passed. */
export function gitEnvironment(protocols: readonly GitProtocol[]): Record<string, string> {
  return {
    PATH: "/usr/local/bin:/usr/bin:/bin",
    HOME: "/nonexistent",
    LC_ALL: "C",
    GIT_TERMINAL_PROMPT: "0",
    GIT_ASKPASS: "/bin/false",
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_CONFIG_GLOBAL: "/dev/null",
    // Empty means "no transport at all": local plumbing (cat-file, init, config) needs none.
    GIT_ALLOW_PROTOCOL: protocols.length > 0 ? protocols.join(":") : "none",
    GIT_PROTOCOL_FROM_USER: "0",
  };
}

/** An HTTP credential for one git run: basic auth, sent only to URLs under `url`. */
export interface GitHttpAuth {
  /** The (checked, normalised) clone URL the header is scoped to (`http.<url>.extraHeader`). */
  url: string;
  username: string;
  password: string;
}

/**
 * The credential as git configuration carried in the child's environment (GIT_CONFIG_COUNT /
 * GIT_CONFIG_KEY_n / GIT_CONFIG_VALUE_n): never argv (visible in /proc/<pid>/cmdline to every
 * local user), never the URL (git would write it to .git/config, FETCH_HEAD and its messages),
 * never a file. Scoped by URL, so a redirect or a submodule elsewhere never receives it (redirects
 * are off anyway). git does not echo extra headers unless GIT_TRACE_CURL is set, which it is not.
 */
function gitHttpAuthEnv(auth: GitHttpAuth): Record<string, string> {
  if (/[\r\n]/.test(auth.username + auth.password)) throw new Error("git credential contains a line break");
  const basic = Buffer.from(`${auth.username}:${auth.password}`, "utf8").toString("base64");
  return {
    GIT_CONFIG_COUNT: "1",
    GIT_CONFIG_KEY_0: `http.${auth.url}.extraHeader`,
    GIT_CONFIG_VALUE_0: `Authorization: Basic ${basic}`,
  };
}

export class GitError extends Error {
  override name = "GitError";
  constructor(
    message: string,
    /** Redacted stderr tail. */
    readonly stderr: string,
    readonly timedOut: boolean,
    readonly aborted: boolean,
  ) {
    super(message);
  }
}

export interface RunGitOptions {
  /** What the command is for, in error messages ("fetch", "checkout"). */
  what: string;
  /** Transports this run may use; [] for local-only commands. */
  protocols?: readonly GitProtocol[];
  signal?: AbortSignal;
  timeoutMs?: number;
  /** stdout beyond this fails the run (it is collected in memory). Default 1 MiB. */
  maxStdoutBytes?: number;
  /** An HTTP credential for this run only, in git's environment (see gitHttpAuthEnv). */
  httpAuth?: GitHttpAuth;
}

/** Runs git with `args`; resolves to stdout. Failures are GitErrors with redacted messages. */
export function runGit(args: readonly string[], opts: RunGitOptions): Promise<string> {
  const timeout = opts.timeoutMs ? AbortSignal.timeout(opts.timeoutMs) : null;
  const signals = [opts.signal, timeout].filter((s): s is AbortSignal => s !== undefined && s !== null);
  const signal = signals.length > 0 ? AbortSignal.any(signals) : null;
  const maxStdout = opts.maxStdoutBytes ?? 1024 * 1024;
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new GitError(`git ${opts.what} aborted`, "", false, true));
    // Own process group so an abort also stops git's helpers (git-remote-https, upload-pack, ...).
    const child = spawn("git", args, {
      // A cast, not a widening: some apps' types (Next's) declare variables every ProcessEnv must have.
      env: {
        ...gitEnvironment(opts.protocols ?? []),
        ...(opts.httpAuth ? gitHttpAuthEnv(opts.httpAuth) : {}),
      } as NodeJS.ProcessEnv,
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
    });
    const out: Buffer[] = [];
    let outBytes = 0;
    let overflow = false;
    let stderr = "";
    const kill = (): void => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL");
      } catch {
        // already exited
      }
    };
    child.stdout.on("data", (chunk: Buffer) => {
      outBytes += chunk.length;
      if (outBytes > maxStdout) {
        overflow = true;
        kill();
      } else out.push(chunk);
    });
    child.stderr.on("data", (chunk: Buffer) => {
      stderr = (stderr + chunk.toString("utf8")).slice(-STDERR_KEEP_BYTES);
    });
    signal?.addEventListener("abort", kill, { once: true });
    child.once("error", (err) => {
      signal?.removeEventListener("abort", kill);
      reject(new GitError(`cannot run git: ${err.message}`, "", false, false));
    });
    child.once("close", (code, sig) => {
      signal?.removeEventListener("abort", kill);
      if (code === 0 && !overflow) return resolve(Buffer.concat(out).toString("utf8"));
      // A deadline, ours or the caller's (AbortSignal.timeout), is reported as such.
      const reason: unknown = signal?.aborted ? signal.reason : undefined;
      const timedOut = reason instanceof Error && reason.name === "TimeoutError";
      const aborted = signal?.aborted === true && !timedOut;
      const why = overflow
        ? `wrote more than ${maxStdout} bytes`
        : timedOut
          ? "timed out"
          : aborted
            ? "aborted"
            : sig
              ? `killed by ${sig}`
              : `exited with code ${code}`;
      let detail = redactCredentials(stderr.trim());
      // Defence in depth: git never prints the header, but no message may ever carry the secret.
      if (opts.httpAuth?.password) detail = detail.replaceAll(opts.httpAuth.password, "***");
      reject(new GitError(`git ${opts.what} ${why}${detail ? `: ${detail}` : ""}`, detail, timedOut, aborted));
    });
  });
}
