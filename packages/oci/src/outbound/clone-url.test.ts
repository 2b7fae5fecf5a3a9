// The clone-URL rules and the git runner (docs/adr/0017), against real git: what an allowed URL
// turns into (one transport, no redirects, DNS pinned), what git's children see of our environment,
// and that credentials never survive into an error.
import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkCloneUrl, prepareCloneUrl, redactCredentials } from "./clone-url.ts";
import { GitError, runGit } from "./git-process.ts";

const exec = promisify(execFile);
let tmp: string;
let bare: string;

beforeAll(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), "kiln-clone-url-"));
  bare = path.join(tmp, "repo.git");
  await exec("git", ["init", "-q", "--bare", bare]);
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

describe("clone URLs", () => {
  it("accepts https to a named host (credentials included) without the local setting", () => {
    const off = { localReposRoot: null };
    expect(checkCloneUrl("https://github.com/acme/app.git", off)).toEqual({
      url: "https://github.com/acme/app.git",
      protocol: "https",
      localPath: null,
    });
    expect(checkCloneUrl("https://x-access-token:ghs_abc@github.com/acme/app.git", off).protocol).toBe("https");
    expect(checkCloneUrl(`file://${bare}`, { localReposRoot: tmp })).toMatchObject({
      protocol: "file",
      localPath: bare,
    });
    expect(checkCloneUrl("http://127.0.0.1:8080/acme/app.git", { localReposRoot: tmp }).protocol).toBe("http");
  });

  it("names every refusal, and never repeats the URL's credentials", () => {
    const local = { localReposRoot: tmp };
    const cases: [string, string][] = [
      ["", "SOURCE.INVALID_URL"],
      ["https://git.example.com/a b.git", "SOURCE.INVALID_URL"],
      ["ssh://git@github.com/acme/app.git", "SOURCE.SCHEME_NOT_ALLOWED"],
      ["ext::sh", "SOURCE.SCHEME_NOT_ALLOWED"],
      ["fd::17", "SOURCE.SCHEME_NOT_ALLOWED"],
      ["/srv/git/app.git", "SOURCE.SCHEME_NOT_ALLOWED"],
      ["file://remote-host/srv/app.git", "SOURCE.INVALID_URL"],
      ["file:///etc/passwd", "SOURCE.OUTSIDE_LOCAL_ROOT"],
      // The URL parser and curl would disagree on these: refused rather than judged by one of them.
      ["https://github.com\\@127.0.0.1/x.git", "SOURCE.INVALID_URL"],
      [`file://${tmp}/x?/../../../etc/repo.git`, "SOURCE.INVALID_URL"],
      [`file://${tmp}/x%2e%2e/repo.git`, "SOURCE.INVALID_URL"],
      ["https://tok:s3cret@0.0.0.0/x.git", "SOURCE.ADDRESS_NOT_ALLOWED"],
      ["https://tok:s3cret@[fe80::1]/x.git", "SOURCE.ADDRESS_NOT_ALLOWED"],
      ["http://tok:s3cret@github.com/x.git", "SOURCE.SCHEME_NOT_ALLOWED"],
    ];
    for (const [url, code] of cases) {
      let caught: unknown = null;
      try {
        checkCloneUrl(url, local);
      } catch (err) {
        caught = err;
      }
      expect(caught, url).toMatchObject({ code });
      expect((caught as Error).message, url).not.toContain("s3cret");
    }
    expect(redactCredentials("fatal: could not read from https://tok:s3cret@github.com/x.git/")).toBe(
      "fatal: could not read from https://***@github.com/x.git/",
    );
  });

  it("pins git to the checked addresses, with redirects off", async () => {
    const prepared = await prepareCloneUrl("https://localhost:4443/acme/app.git", { localReposRoot: tmp });
    expect(prepared.gitConfig).toContain("http.followRedirects=false");
    const pin = prepared.gitConfig.find((c) => c.startsWith("http.curloptResolve="));
    expect(pin).toMatch(/^http\.curloptResolve=localhost:4443:(127\.0\.0\.1|\[::1\])/);
    await expect(prepareCloneUrl("https://vm/acme/app.git", { localReposRoot: tmp })).rejects.toMatchObject({
      code: "SOURCE.ADDRESS_NOT_ALLOWED",
    });
  });
});

describe("runGit", () => {
  it("gives git nothing of this process's environment and only the transports asked for", async () => {
    const saved = { ...process.env };
    process.env.DATABASE_URL = "postgres://kiln:db-secret@127.0.0.1/kiln";
    process.env.KILN_JOB_TOKEN_KEY = "job-key-secret";
    process.env.GIT_SSH_COMMAND = "touch /tmp/kiln-should-not-run";
    try {
      // An alias with `!` runs a shell child of git, with git's environment.
      const env = await runGit(["-c", "alias.kiln-env=!env", "kiln-env"], { what: "env", protocols: ["https"] });
      expect(env).toContain("GIT_ALLOW_PROTOCOL=https\n");
      expect(env).toContain("HOME=/nonexistent\n");
      for (const secret of ["DATABASE_URL", "KILN_", "GIT_SSH_COMMAND", "db-secret"]) expect(env).not.toContain(secret);
    } finally {
      for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k];
    }
    // A transport not asked for is refused by git itself.
    await expect(runGit(["ls-remote", `file://${bare}`], { what: "ls-remote", protocols: ["https"] })).rejects.toThrow(
      /transport 'file' not allowed/,
    );
    await expect(runGit(["ls-remote", `file://${bare}`], { what: "ls-remote", protocols: ["file"] })).resolves.toBe("");
  });

  it("redacts credentials from git's stderr and reports deadlines", async () => {
    const err = (await runGit(["ls-remote", "https://tok:s3cret@127.0.0.1:1/x.git"], {
      what: "ls-remote",
      protocols: ["https"],
    }).catch((e: unknown) => e)) as GitError;
    expect(err).toBeInstanceOf(GitError);
    expect(err.message).toMatch(/git ls-remote exited with code 128/);
    expect(err.message).not.toContain("s3cret");
    const slow = (await runGit(["-c", "alias.nap=!sleep 5", "nap"], { what: "nap", timeoutMs: 200 }).catch(
      (e: unknown) => e,
    )) as GitError;
    expect(slow).toMatchObject({ timedOut: true, message: expect.stringContaining("git nap timed out") });
  });
});
