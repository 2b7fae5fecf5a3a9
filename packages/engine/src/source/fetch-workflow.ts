import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdir, stat } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

export type FetchResult =
  | { ok: true; content: string; sha256: string }
  | { ok: false; kind: "not_found"; message: string }
  | { ok: false; kind: "unreachable"; message: string }
  | { ok: false; kind: "too_large"; message: string };

const MAX_WORKFLOW_BYTES = 256 * 1024;

// Git takes lock files in a mirror (shallow.lock, index/ref locks) and refuses, rather than waits,
// when another fetch holds them; a burst of runs of one new commit would then look "unreachable".
// Fetches into one mirror are serialised in this process, and a collision with another process is
// retried briefly: a lock held by a sibling says nothing about the forge.
const mirrorQueues = new Map<string, Promise<unknown>>();
const LOCK_COLLISION =
  /shallow\.lock|\.lock': File exists|shallow file has changed|Unable to create .*\.lock|cannot lock ref/i;

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

function serialised<T>(dir: string, fn: () => Promise<T>): Promise<T> {
  const prev = mirrorQueues.get(dir) ?? Promise.resolve();
  const next = prev.then(fn, fn);
  const tail = next.then(
    () => undefined,
    () => undefined,
  );
  mirrorQueues.set(dir, tail);
  void tail.then(() => {
    if (mirrorQueues.get(dir) === tail) mirrorQueues.delete(dir);
  });
  return next;
}

/**
 * Reads one file at an exact commit from the repo's git URL (file://, http(s)://). The bytes come
 * from the commit object, never from a branch, so a later push cannot change what a run means.
 * A mirror per repo under `cacheDir` keeps repeated fetches cheap.
 */
export async function fetchWorkflowFile(opts: {
  cacheDir: string;
  repoId: string;
  cloneUrl: string;
  commitSha: string;
  filePath: string;
  timeoutMs?: number;
}): Promise<FetchResult> {
  const cacheKey = `${opts.repoId}\0${opts.cloneUrl}\0${opts.commitSha}\0${opts.filePath}`;
  const hit = found.get(cacheKey);
  if (hit) return hit;
  const dir = path.join(opts.cacheDir, `${opts.repoId}.git`);
  const git = (args: string[]) =>
    run("git", ["-C", dir, ...args], {
      timeout: opts.timeoutMs ?? 30_000,
      maxBuffer: MAX_WORKFLOW_BYTES * 4,
      env: { ...process.env, GIT_TERMINAL_PROMPT: "0", GIT_ASKPASS: "/bin/false" },
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
    : await serialised(dir, async (): Promise<FetchResult | null> => {
        try {
          await stat(path.join(dir, "HEAD"));
        } catch {
          await mkdir(dir, { recursive: true });
          await git(["init", "--bare", "-q"]);
        }
        // Checked again inside the queue: the fetch ahead of us may have brought this very commit.
        if (await hasCommit()) return null;
        for (let tryNo = 0; ; tryNo++) {
          try {
            await git(["fetch", "-q", "--no-tags", "--depth=1", opts.cloneUrl, opts.commitSha]);
            return null;
          } catch (e) {
            const msg = errText(e);
            if (LOCK_COLLISION.test(msg) && tryNo < 8) {
              await new Promise((r) => setTimeout(r, 50 + Math.random() * 150 * (tryNo + 1)));
              if (await hasCommit()) return null;
              continue;
            }
            if (
              /not our ref|couldn't find remote ref|no such remote ref|unadvertised object|bad object|invalid/i.test(
                msg,
              )
            ) {
              // Servers that refuse fetch-by-id still serve full history; the commit may be in it.
              const full = await git(["fetch", "-q", "--no-tags", opts.cloneUrl, "+refs/*:refs/kiln/*"]).then(
                () => true,
                () => false,
              );
              if (full && (await hasCommit())) return null;
              return {
                ok: false,
                kind: "not_found",
                message: `commit ${opts.commitSha} does not exist in ${opts.cloneUrl}`,
              };
            }
            return {
              ok: false,
              kind: "unreachable",
              message: `could not fetch ${opts.cloneUrl}: ${msg.slice(0, 300)}`,
            };
          }
        }
      });
  if (missing) return missing;
  const size = await git(["cat-file", "-s", `${opts.commitSha}:${opts.filePath}`]).then(
    (r) => Number(r.stdout.trim()),
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
  const blob = await git(["cat-file", "blob", `${opts.commitSha}:${opts.filePath}`]);
  const content = blob.stdout;
  const result = { ok: true as const, content, sha256: createHash("sha256").update(content).digest("hex") };
  remember(cacheKey, result);
  return result;
}

function errText(e: unknown): string {
  const o = e as { stderr?: string; message?: string };
  return `${o.stderr ?? ""} ${o.message ?? ""}`.trim();
}
