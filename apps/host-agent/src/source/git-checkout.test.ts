// Checkout against a real git repository on disk (file transport): the same init + shallow fetch
// by sha + checkout the agent does before the first step; and the source policy (docs/adr/0017):
// which clone URLs are refused before git runs, and what environment git runs with.
import { execFile } from "node:child_process";
import { chmod, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkoutSource } from "./git-checkout.ts";

const exec = promisify(execFile);
let tmp: string;
let repo: string;
let firstSha: string;
/** Local repositories enabled under the test's temp dir, as `npm run up` does for its demo repo. */
let LOCAL: { localReposRoot: string };
const OFF = { localReposRoot: null };

async function git(cwd: string, ...args: string[]): Promise<string> {
  const { stdout } = await exec("git", ["-c", "user.email=t@example.com", "-c", "user.name=t", ...args], { cwd });
  return stdout.trim();
}

beforeAll(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), "kiln-checkout-test-"));
  repo = path.join(tmp, "repo");
  LOCAL = { localReposRoot: tmp };
  await exec("git", ["init", "-q", repo]);
  await writeFile(path.join(repo, "a.txt"), "one\n");
  await git(repo, "add", ".");
  await git(repo, "commit", "-qm", "first");
  firstSha = await git(repo, "rev-parse", "HEAD");
  await writeFile(path.join(repo, "a.txt"), "two\n");
  await git(repo, "commit", "-qam", "second");
  await git(repo, "config", "uploadpack.allowAnySHA1InWant", "true");
});

afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

describe("checkoutSource", () => {
  it("checks out exactly the requested commit, even when it is not the tip", async () => {
    const dir = path.join(tmp, "ws-1");
    await checkoutSource({ dir, cloneUrl: `file://${repo}`, commitSha: firstSha, source: LOCAL });
    expect(await readFile(path.join(dir, "a.txt"), "utf8")).toBe("one\n");
    expect(await git(dir, "rev-parse", "HEAD")).toBe(firstSha);
  });

  it("fails with git's reason for an unknown commit, and refuses option-like input", async () => {
    const dir = path.join(tmp, "ws-2");
    await expect(
      checkoutSource({ dir, cloneUrl: `file://${repo}`, commitSha: "1".repeat(40), source: LOCAL }),
    ).rejects.toThrow(/git fetch exited with code 128/);
    await expect(
      checkoutSource({ dir, cloneUrl: "--upload-pack=touch /tmp/x", commitSha: firstSha, source: LOCAL }),
    ).rejects.toMatchObject({ code: "SOURCE.INVALID_URL" });
    await expect(
      checkoutSource({ dir, cloneUrl: `file://${repo}`, commitSha: "--help", source: LOCAL }),
    ).rejects.toThrow(/invalid commit sha/);
  });

  it("never shows credentials embedded in the clone URL", async () => {
    const dir = path.join(tmp, "ws-3");
    const err = await checkoutSource({
      dir,
      cloneUrl: "https://user:s3cret@127.0.0.1:1/x.git",
      commitSha: firstSha,
      source: LOCAL,
    }).catch((e: unknown) => e);
    expect(String(err)).toMatch(/git fetch/);
    expect(String(err)).not.toContain("s3cret");
  });

  it("stops when aborted", async () => {
    const dir = path.join(tmp, "ws-4");
    const controller = new AbortController();
    controller.abort();
    await expect(
      checkoutSource({
        dir,
        cloneUrl: `file://${repo}`,
        commitSha: firstSha,
        signal: controller.signal,
        source: LOCAL,
      }),
    ).rejects.toThrow(/aborted/);
  });

  it("with a host mirror: asks the forge once per commit, then checks out from the mirror alone", async () => {
    const mirrorDir = path.join(tmp, "mirrors");
    const copy = path.join(tmp, "repo-copy");
    await exec("cp", ["-a", repo, copy]);
    const cloneUrl = `file://${copy}`;
    const first = await Promise.all(
      [5, 6, 7].map((i) =>
        checkoutSource({ dir: path.join(tmp, `ws-${i}`), cloneUrl, commitSha: firstSha, mirrorDir, source: LOCAL }),
      ),
    );
    expect(first).toHaveLength(3);
    for (const i of [5, 6, 7]) expect(await readFile(path.join(tmp, `ws-${i}`, "a.txt"), "utf8")).toBe("one\n");
    // The forge is gone: the commit still checks out, from the mirror.
    await rm(copy, { recursive: true, force: true });
    const dir = path.join(tmp, "ws-8");
    await checkoutSource({ dir, cloneUrl, commitSha: firstSha, mirrorDir, source: LOCAL });
    expect(await git(dir, "rev-parse", "HEAD")).toBe(firstSha);
    expect(await readFile(path.join(dir, "a.txt"), "utf8")).toBe("one\n");
    // A commit the mirror lacks still needs the forge, and says why it failed.
    await expect(
      checkoutSource({ dir: path.join(tmp, "ws-9"), cloneUrl, commitSha: "2".repeat(40), mirrorDir, source: LOCAL }),
    ).rejects.toThrow(/git fetch exited with code 128/);
  });

  it("refuses clone URLs outside the source policy before git runs, each with its code, credentials redacted", async () => {
    const outside = await mkdtemp(path.join(os.tmpdir(), "kiln-other-tenant-"));
    await exec("git", ["init", "-q", "--bare", outside]);
    const planted = path.join(tmp, "planted");
    await symlink(outside, planted);
    const marker = path.join(tmp, "ext-ran");
    const cases: [string, { localReposRoot: string | null }, string][] = [
      [`file://${repo}`, OFF, "SOURCE.LOCAL_NOT_ENABLED"],
      [`file://${outside}`, LOCAL, "SOURCE.OUTSIDE_LOCAL_ROOT"],
      [`file://${tmp}/../${path.basename(outside)}`, LOCAL, "SOURCE.OUTSIDE_LOCAL_ROOT"],
      // Inside the root by name, outside once the symlink is followed.
      [`file://${planted}`, LOCAL, "SOURCE.OUTSIDE_LOCAL_ROOT"],
      ["ssh://git@127.0.0.1/x.git", LOCAL, "SOURCE.SCHEME_NOT_ALLOWED"],
      ["git://127.0.0.1/x.git", LOCAL, "SOURCE.SCHEME_NOT_ALLOWED"],
      [`ext::sh -c touch% ${marker}`, LOCAL, "SOURCE.INVALID_URL"],
      [`ext::sh`, LOCAL, "SOURCE.SCHEME_NOT_ALLOWED"],
      ["git@github.com:acme/app.git", LOCAL, "SOURCE.SCHEME_NOT_ALLOWED"],
      ["--upload-pack=touch /tmp/x", LOCAL, "SOURCE.INVALID_URL"],
      ["http://127.0.0.1/acme/app.git", OFF, "SOURCE.LOCAL_NOT_ENABLED"],
      ["https://localhost/acme/app.git", OFF, "SOURCE.LOCAL_NOT_ENABLED"],
      ["http://[::1]:8080/acme/app.git", OFF, "SOURCE.LOCAL_NOT_ENABLED"],
      ["http://git.example.com/acme/app.git", LOCAL, "SOURCE.SCHEME_NOT_ALLOWED"],
      ["https://169.254.169.254/latest/meta-data/", LOCAL, "SOURCE.ADDRESS_NOT_ALLOWED"],
      ["https://10.0.0.8/acme/app.git", LOCAL, "SOURCE.ADDRESS_NOT_ALLOWED"],
      ["https://[::ffff:192.168.1.1]/acme/app.git", LOCAL, "SOURCE.ADDRESS_NOT_ALLOWED"],
      // /etc/hosts maps "vm" to 127.0.0.1: a name that resolves inward is refused, local or not.
      ["https://user:s3cret@vm/acme/app.git", LOCAL, "SOURCE.ADDRESS_NOT_ALLOWED"],
      ["https://user:s3cret@169.254.169.254/x.git", LOCAL, "SOURCE.ADDRESS_NOT_ALLOWED"],
      ["https://user:s3cret@127.0.0.1/x.git", OFF, "SOURCE.LOCAL_NOT_ENABLED"],
    ];
    for (const [cloneUrl, source, code] of cases) {
      const dir = path.join(tmp, "ws-refused");
      const err = (await checkoutSource({ dir, cloneUrl, commitSha: firstSha, source }).then(
        () => null,
        (e: unknown) => e,
      )) as (Error & { code?: string }) | null;
      expect(err?.code, cloneUrl).toBe(code);
      expect(err?.message, cloneUrl).not.toContain("s3cret");
      // Refused before git ran: not even the workspace was initialised.
      await expect(readFile(path.join(dir, ".git", "HEAD")), cloneUrl).rejects.toThrow();
    }
    await expect(readFile(marker)).rejects.toThrow();
    await rm(outside, { recursive: true, force: true });
  });

  it("runs git with a minimal environment: none of the agent's secrets reach it or its hooks", async () => {
    const dir = path.join(tmp, "ws-env");
    // A hook in the workspace sees exactly the environment git was given.
    await exec("git", ["init", "-q", dir]);
    const dump = path.join(tmp, "hook-env");
    await mkdir(path.join(dir, ".git", "hooks"), { recursive: true });
    await writeFile(path.join(dir, ".git", "hooks", "post-checkout"), `#!/bin/sh\nenv > ${dump}\n`);
    await chmod(path.join(dir, ".git", "hooks", "post-checkout"), 0o755);
    const saved = { ...process.env };
    process.env.DATABASE_URL = "postgres://kiln:db-secret@127.0.0.1/kiln";
    process.env.KILN_AGENT_TOKEN = "kagent_secret_token";
    process.env.KILN_JOB_TOKEN_KEY = "job-key-secret";
    process.env.AWS_SECRET_ACCESS_KEY = "aws-secret";
    process.env.GIT_SSH_COMMAND = `touch ${path.join(tmp, "ssh-ran")}`;
    try {
      await checkoutSource({ dir, cloneUrl: `file://${repo}`, commitSha: firstSha, source: LOCAL });
    } finally {
      for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k];
    }
    const env = await readFile(dump, "utf8");
    // The hook runs under `git checkout`, which needs no transport at all.
    expect(env).toContain("GIT_ALLOW_PROTOCOL=none");
    expect(env).toContain("GIT_CONFIG_NOSYSTEM=1");
    for (const secret of ["DATABASE_URL", "KILN_", "AWS_SECRET", "GIT_SSH_COMMAND", "db-secret", "kagent_secret"])
      expect(env, secret).not.toContain(secret);
  });
});
