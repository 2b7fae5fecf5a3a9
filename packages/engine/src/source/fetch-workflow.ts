import { createHash } from "node:crypto";
import { mkdir, stat } from "node:fs/promises";
import path from "node:path";
import {
  checkCloneUrl,
  isCloneUrlError,
  prepareCloneUrl,
  redactCredentials,
  runGit,
  type GitHttpAuth,
  type PreparedCloneUrl,
  type SourcePolicy,
} from "@kiln/oci";
import { MIRROR_LOCK_COLLISION, serialiseByKey } from "../shared/serialise-by-key.ts";

export type FetchResult =
  | { ok: true; content: string; sha256: string }
  | { ok: false; kind: "not_found"; message: string }
  | { ok: false; kind: "unreachable"; message: string }
  | { ok: false; kind: "too_large"; message: string }
  /** The forge refused to serve the repo: private with no credential, or its credential refused (issue 28). */
  | { ok: false; kind: "auth_refused"; message: string }
  /** The clone URL is one Kiln does not fetch from (docs/adr/0017); `code` names the rule. */
  | { ok: false; kind: "refused"; code: string; message: string };

const MAX_WORKFLOW_BYTES = 256 * 1024;

// What git says when the forge answers 401/403 and it has no (other) way to authenticate.
const AUTH_REFUSED =
  /could not read Username|Authentication failed|terminal prompts disabled|returned error: 40[13]|HTTP 40[13]/i;

// Git takes lock files in a mirror (shallow.lock, index/ref locks) and refuses, rather than waits,
// when another fetch holds them; a burst of runs of one new commit would then look "unreachable".
// Fetches into one mirror are serialised in this process, and a collision with another process is
// retried briefly: a lock held by a sibling says nothing about the forge.

// A file's bytes at a commit never change, so found files are remembered per process: a burst of
// runs of one commit (push + PR events, retries, a monorepo's many workflows) reads git once.
// Only successes are cached; "not found" may be a commit the mirror has not fetched yet.
const MAX_CACHED = 512;
const found = new Map<string, FetchResult & { ok: true }>();

function remember(key: string, r: FetchResult & { ok: true }): void {
  if (found.size >= MAX_CACHED) {
    const oldest = found.keys().next();
    if (!oldest.done) found.delete(oldest.value);
  }
  found.set(key, r);
}

/**
 * Reads one file at an exact commit from the repo's git URL (https://, or file:// and loopback when
 * the operator enabled local repositories). The bytes come from the commit object, never from a
 * branch, so a later push cannot change what a run means. A mirror per repo under `cacheDir` keeps
 * repeated fetches cheap. Git runs with a minimal environment (never the app's: it holds
 * DATABASE_URL and keys) and only the URL's own transport.
 */
export async function fetchWorkflowFile(opts: {
  cacheDir: string;
  repoId: string;
  cloneUrl: string;
  commitSha: string;
  filePath: string;
  source: SourcePolicy;
  timeoutMs?: number;
  /**
   * The repo's forge credential (issue 28), asked only when the forge must be fetched from. It goes
   * to git's environment (scoped to the URL), never into the URL or the mirror's config.
   */
  credential?: () => Promise<{ username: string; password: string } | null>;
}): Promise<FetchResult> {
  const cacheKey = `${opts.repoId}\0${opts.cloneUrl}\0${opts.commitSha}\0${opts.filePath}`;
  const hit = found.get(cacheKey);
  if (hit) return hit;
  const shown = redactCredentials(opts.cloneUrl);
  try {
    checkCloneUrl(opts.cloneUrl, opts.source); // even when the mirror already has the commit
  } catch (e) {
    if (isCloneUrlError(e)) return { ok: false, kind: "refused", code: e.code, message: e.message };
    throw e;
  }
  const dir = path.join(opts.cacheDir, `${opts.repoId}.git`);
  let httpAuth: GitHttpAuth | undefined;
  const git = (args: string[], remote?: PreparedCloneUrl) =>
    runGit([...(remote?.gitConfig ?? []), "-C", dir, ...args], {
      what: args[0] ?? "",
      protocols: remote ? [remote.protocol] : [],
      timeoutMs: opts.timeoutMs ?? 30_000,
      maxStdoutBytes: MAX_WORKFLOW_BYTES * 4,
      ...(remote && httpAuth ? { httpAuth } : {}),
    });
  const hasCommit = () =>
    git(["cat-file", "-e", `${opts.commitSha}^{commit}`]).then(
      () => true,
      () => false,
    );
  const known = await stat(path.join(dir, "HEAD")).then(
    () => hasCommit(),
    () => false,
  );
  const missing = known
    ? null
    : await serialiseByKey(dir, async (): Promise<FetchResult | null> => {
        try {
          await stat(path.join(dir, "HEAD"));
        } catch {
          await mkdir(dir, { recursive: true });
          await git(["init", "--bare", "-q"]);
        }
        // Checked again inside the queue: the fetch ahead of us may have brought this very commit.
        if (await hasCommit()) return null;
        // Checked before every fetch, not only when the repo was registered: the rule or the
        // name's DNS answer may have changed since, and git is pinned to the addresses checked here.
        let remote: PreparedCloneUrl;
        try {
          remote = await prepareCloneUrl(opts.cloneUrl, opts.source);
        } catch (e) {
          if (isCloneUrlError(e)) return { ok: false, kind: "refused", code: e.code, message: e.message };
          return {
            ok: false,
            kind: "unreachable",
            message: `could not fetch ${shown}: ${redactCredentials(errText(e))}`,
          };
        }
        const cred = remote.protocol === "file" || !opts.credential ? null : await opts.credential();
        if (cred) httpAuth = { url: remote.url, ...cred };
        for (let tryNo = 0; ; tryNo++) {
          try {
            await git(["fetch", "-q", "--no-tags", "--depth=1", "--", remote.url, opts.commitSha], remote);
            return null;
          } catch (e) {
            const msg = errText(e);
            if (MIRROR_LOCK_COLLISION.test(msg) && tryNo < 8) {
              await new Promise((r) => setTimeout(r, 50 + Math.random() * 150 * (tryNo + 1)));
              if (await hasCommit()) return null;
              continue;
            }
            if (AUTH_REFUSED.test(msg))
              return {
                ok: false,
                kind: "auth_refused",
                message: httpAuth
                  ? `${shown} refused the repository's forge credential (its token or App installation)`
                  : `${shown} asks for a credential and the repository has none (set a forge token or install the GitHub App)`,
              };
            if (
              /not our ref|couldn't find remote ref|no such remote ref|unadvertised object|bad object|invalid/i.test(
                msg,
              )
            ) {
              // Servers that refuse fetch-by-id still serve full history; the commit may be in it.
              const full = await git(
                ["fetch", "-q", "--no-tags", "--", remote.url, "+refs/*:refs/kiln/*"],
                remote,
              ).then(
                () => true,
                () => false,
              );
              if (full && (await hasCommit())) return null;
              return {
                ok: false,
                kind: "not_found",
                message: `commit ${opts.commitSha} does not exist in ${shown}`,
              };
            }
            return {
              ok: false,
              kind: "unreachable",
              message: `could not fetch ${shown}: ${redactCredentials(msg).slice(0, 300)}`,
            };
          }
        }
      });
  if (missing) return missing;
  const size = await git(["cat-file", "-s", `${opts.commitSha}:${opts.filePath}`]).then(
    (r) => Number(r.trim()),
    () => null,
  );
  if (size === null)
    return { ok: false, kind: "not_found", message: `${opts.filePath} does not exist at commit ${opts.commitSha}` };
  if (size > MAX_WORKFLOW_BYTES) {
    return {
      ok: false,
      kind: "too_large",
      message: `${opts.filePath} is ${size} bytes; the limit is ${MAX_WORKFLOW_BYTES}`,
    };
  }
  const content = await git(["cat-file", "blob", `${opts.commitSha}:${opts.filePath}`]);
  const result = { ok: true as const, content, sha256: createHash("sha256").update(content).digest("hex") };
  remember(cacheKey, result);
  return result;
}

// A GitError's message already carries git's (redacted) stderr.
function errText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
