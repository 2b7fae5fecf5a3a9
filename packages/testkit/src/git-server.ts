// A real git smart-HTTP server for tests. Kiln's runners fetch source with plain
// `git fetch <url> <sha>`, so tests need a server that speaks the genuine protocol (v0 and v2,
// shallow fetches, fetch-by-sha) rather than a mock. We get that for free by running git's own
// CGI program, git-http-backend, behind a tiny node:http server on 127.0.0.1.
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";

const GIT_HTTP_BACKEND = process.env.GIT_HTTP_BACKEND ?? "/usr/lib/git-core/git-http-backend";
const execFileAsync = promisify(execFile);

/** Environment for every git we run: ignore the developer's ~/.gitconfig and /etc/gitconfig
 * (commit.gpgsign, url.insteadOf, credential helpers...) so tests behave the same everywhere,
 * and never block on a username prompt. */
export function gitEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return {
    ...process.env,
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_CONFIG_GLOBAL: "/dev/null",
    GIT_TERMINAL_PROMPT: "0",
    ...extra,
  };
}

/** Runs git in `cwd` and returns trimmed stdout; errors include git's stderr. */
export async function runGit(cwd: string, args: string[]): Promise<string> {
  const ident = ["-c", "user.name=kiln", "-c", "user.email=kiln@localhost", "-c", "init.defaultBranch=main"];
  try {
    const { stdout } = await execFileAsync("git", [...ident, ...args], { cwd, env: gitEnv(), maxBuffer: 64 << 20 });
    return stdout.trim();
  } catch (err) {
    const e = err as Error & { stderr?: string };
    throw new Error(`git ${args.join(" ")} failed in ${cwd}: ${e.stderr?.trim() || e.message}`, { cause: err });
  }
}

export interface TestGitRepo {
  cloneUrl: string;
  /** Writes `files` (null = delete), commits, pushes; resolves to the new commit sha. */
  commit(files: Record<string, string | null>, message?: string): Promise<string>;
  /** Sha of the branch tip; updated by commit(). */
  readonly headSha: string;
}

export interface TestGitServer {
  baseUrl: string;
  /**
   * The source policy under which its repos register and fetch (docs/adr/0017): local repositories
   * enabled (it serves on loopback) under its root. Pass it to addRepo.
   */
  sourcePolicy: { localReposRoot: string };
  createRepo(name: string, files: Record<string, string>, opts?: { branch?: string }): Promise<TestGitRepo>;
  /** Requests refused for a missing or wrong credential (basicAuth servers only). */
  readonly refusedAuth: number;
  stop(): Promise<void>;
}

/** A private forge: every request must carry HTTP basic auth with this user and password. */
export interface GitServerAuth {
  username: string;
  password: string;
}

/** True when the request's Authorization header is exactly `Basic base64(user:password)`. */
function authorized(req: http.IncomingMessage, auth: GitServerAuth): boolean {
  const header = req.headers.authorization ?? "";
  const expected = `Basic ${Buffer.from(`${auth.username}:${auth.password}`).toString("base64")}`;
  return header === expected;
}

/** Repo names become URL paths and directories, so keep them boring: `a/b-c.d`, no `..`. */
function repoDirName(name: string): string {
  if (!/^[A-Za-z0-9_-][A-Za-z0-9._-]*(\/[A-Za-z0-9_-][A-Za-z0-9._-]*)*$/.test(name)) {
    throw new Error(`invalid repo name ${JSON.stringify(name)}`);
  }
  return name.endsWith(".git") ? name : `${name}.git`;
}

/** Resolves a repo-relative file path inside `workDir`, refusing escapes and `.git/`. */
function filePath(workDir: string, rel: string): string {
  const norm = path.posix.normalize(rel);
  if (path.posix.isAbsolute(norm) || norm.startsWith("../") || norm === ".." || norm.split("/")[0] === ".git") {
    throw new Error(`invalid file path ${JSON.stringify(rel)}`);
  }
  return path.join(workDir, ...norm.split("/"));
}

async function applyFiles(workDir: string, files: Record<string, string | null>): Promise<void> {
  for (const [rel, content] of Object.entries(files)) {
    const abs = filePath(workDir, rel);
    if (content === null) {
      await rm(abs, { force: true });
    } else {
      await mkdir(path.dirname(abs), { recursive: true });
      await writeFile(abs, content);
    }
  }
}

/** Splits a CGI response into its header block and the rest. Headers end at the first blank
 * line; git-http-backend uses CRLF, but CGI allows bare LF, so accept both. */
function splitCgiHeaders(buf: Buffer): { head: string; body: Buffer } | undefined {
  const crlf = buf.indexOf("\r\n\r\n");
  const lf = buf.indexOf("\n\n");
  let at: number;
  let len: number;
  if (crlf >= 0 && (lf < 0 || crlf < lf)) {
    at = crlf;
    len = 4;
  } else if (lf >= 0) {
    at = lf;
    len = 2;
  } else return undefined;
  return { head: buf.subarray(0, at).toString("latin1"), body: buf.subarray(at + len) };
}

function handleCgi(
  rootDir: string,
  children: Set<ChildProcess>,
  req: http.IncomingMessage,
  res: http.ServerResponse,
): void {
  const url = new URL(req.url ?? "/", "http://localhost");
  const env: NodeJS.ProcessEnv = {
    ...gitEnv(),
    GIT_PROJECT_ROOT: rootDir,
    GIT_HTTP_EXPORT_ALL: "1", // serve every repo under rootDir without a git-daemon-export-ok file
    PATH_INFO: decodeURIComponent(url.pathname),
    QUERY_STRING: url.search.slice(1),
    REQUEST_METHOD: req.method ?? "GET",
    CONTENT_TYPE: req.headers["content-type"] ?? "",
    REMOTE_ADDR: req.socket.remoteAddress ?? "127.0.0.1",
  };
  // Node has already de-chunked the body; pass a length only when the client sent one.
  if (req.headers["content-length"]) env.CONTENT_LENGTH = req.headers["content-length"];
  // git gzips large upload-pack requests; the backend inflates them if told so.
  if (req.headers["content-encoding"]) env.HTTP_CONTENT_ENCODING = req.headers["content-encoding"];
  // Protocol v2 is negotiated through this header (git-http-backend reads HTTP_GIT_PROTOCOL).
  const proto = req.headers["git-protocol"];
  if (typeof proto === "string") env.HTTP_GIT_PROTOCOL = proto;

  const child = spawn(GIT_HTTP_BACKEND, [], { env, stdio: ["pipe", "pipe", "pipe"] });
  children.add(child);
  let stderr = "";
  child.stderr.on("data", (d: Buffer) => {
    stderr = (stderr + d.toString("utf8")).slice(-4000);
  });
  child.stdin.on("error", () => {}); // EPIPE when the backend answers without reading the body
  req.pipe(child.stdin);
  res.on("close", () => {
    if (child.exitCode === null) child.kill("SIGKILL");
  }); // client went away

  let pending: Buffer | undefined = Buffer.alloc(0);
  child.stdout.on("data", (chunk: Buffer) => {
    if (pending === undefined) {
      res.write(chunk);
      return;
    } // headers already sent: stream
    pending = Buffer.concat([pending, chunk]);
    const split = splitCgiHeaders(pending);
    if (!split) return;
    pending = undefined;
    let status = 200;
    let reason: string | undefined;
    for (const line of split.head.split(/\r?\n/)) {
      const i = line.indexOf(":");
      if (i <= 0) continue;
      const key = line.slice(0, i).trim();
      const value = line.slice(i + 1).trim();
      if (key.toLowerCase() === "status") {
        const m = /^(\d{3})\s*(.*)$/.exec(value);
        if (m) {
          status = Number(m[1]);
          reason = m[2] || undefined;
        }
      } else {
        res.appendHeader(key, value);
      }
    }
    res.statusCode = status;
    if (reason) res.statusMessage = reason;
    res.write(split.body);
  });
  child.on("error", (err) => {
    children.delete(child);
    if (!res.headersSent) res.writeHead(500, { "content-type": "text/plain" });
    res.end(`git-http-backend failed to start: ${err.message}\n`);
  });
  child.on("close", (code) => {
    children.delete(child);
    if (pending !== undefined && !res.headersSent) {
      res.writeHead(500, { "content-type": "text/plain" });
      res.end(`git-http-backend exited (${code}) without a response: ${stderr}\n`);
      return;
    }
    res.end();
  });
}

export async function startGitServer(opts: { rootDir: string; basicAuth?: GitServerAuth }): Promise<TestGitServer> {
  const rootDir = path.resolve(opts.rootDir);
  await mkdir(rootDir, { recursive: true });
  if (!existsSync(GIT_HTTP_BACKEND)) {
    throw new Error(`${GIT_HTTP_BACKEND} not found; install git (apt-get install git) or set GIT_HTTP_BACKEND`);
  }
  const children = new Set<ChildProcess>();
  const workDirs: string[] = [];
  let refusedAuth = 0;
  const server = http.createServer((req, res) => {
    // As a private GitHub repo answers: 401 with a Basic challenge, before git-http-backend runs.
    if (opts.basicAuth && !authorized(req, opts.basicAuth)) {
      refusedAuth++;
      req.resume();
      res.writeHead(401, { "www-authenticate": 'Basic realm="kiln-test"', "content-type": "text/plain" });
      res.end("authentication required\n");
      return;
    }
    handleCgi(rootDir, children, req, res);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  async function createRepo(
    name: string,
    files: Record<string, string>,
    repoOpts: { branch?: string } = {},
  ): Promise<TestGitRepo> {
    const dirName = repoDirName(name);
    const branch = repoOpts.branch ?? "main";
    const bareDir = path.join(rootDir, ...dirName.split("/"));
    if (existsSync(bareDir)) throw new Error(`repo ${name} already exists at ${bareDir}`);
    await mkdir(path.dirname(bareDir), { recursive: true });
    await runGit(rootDir, ["init", "-q", "--bare", "-b", branch, bareDir]);
    // Runners fetch exact commits (`git fetch <url> <sha>`), including ones that are no longer
    // a branch tip. Protocol v0 only allows that with these set (v2 is more permissive).
    await runGit(bareDir, ["config", "uploadpack.allowAnySHA1InWant", "true"]);
    await runGit(bareDir, ["config", "uploadpack.allowReachableSHA1InWant", "true"]);

    // Commits are authored in a private non-bare clone and pushed over the filesystem, so the
    // HTTP side stays read-only (no receive-pack/auth needed) and sees exactly what a real
    // forge would after a push.
    const workDir = await mkdtemp(path.join(os.tmpdir(), "kiln-git-work-"));
    workDirs.push(workDir);
    await runGit(workDir, ["init", "-q", "-b", branch]);

    let headSha = "";
    let queue: Promise<unknown> = Promise.resolve();
    const commit = (changes: Record<string, string | null>, message = "update"): Promise<string> => {
      // Serialise: concurrent commit() calls would otherwise race on the same index/worktree.
      const next = queue.then(async () => {
        await applyFiles(workDir, changes);
        await runGit(workDir, ["add", "-A"]);
        // --allow-empty: every commit() yields a new sha, even if the content did not change.
        await runGit(workDir, ["commit", "-q", "--allow-empty", "--no-verify", "-m", message]);
        await runGit(workDir, ["push", "-q", bareDir, `HEAD:refs/heads/${branch}`]);
        headSha = await runGit(workDir, ["rev-parse", "HEAD"]);
        return headSha;
      });
      queue = next.catch(() => {});
      return next;
    };
    await commit(files, "initial commit");
    return {
      cloneUrl: `${baseUrl}/${dirName}`,
      commit,
      get headSha() {
        return headSha;
      },
    };
  }

  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      for (const c of children) c.kill("SIGKILL");
      server.closeAllConnections(); // git keeps connections alive; don't wait for them
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await Promise.all(workDirs.map((d) => rm(d, { recursive: true, force: true })));
    })());

  return {
    baseUrl,
    sourcePolicy: { localReposRoot: rootDir },
    createRepo,
    get refusedAuth() {
      return refusedAuth;
    },
    stop,
  };
}
