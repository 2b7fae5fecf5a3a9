// Checkout against a real git repository on disk (file transport): the same init + shallow fetch
// by sha + checkout the agent does before the first step.
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkoutSource } from "./git-checkout.ts";

const exec = promisify(execFile);
let tmp: string;
let repo: string;
let firstSha: string;

async function git(cwd: string, ...args: string[]): Promise<string> {
  const { stdout } = await exec("git", ["-c", "user.email=t@example.com", "-c", "user.name=t", ...args], { cwd });
  return stdout.trim();
}

beforeAll(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), "kiln-checkout-test-"));
  repo = path.join(tmp, "repo");
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
    await checkoutSource({ dir, cloneUrl: `file://${repo}`, commitSha: firstSha });
    expect(await readFile(path.join(dir, "a.txt"), "utf8")).toBe("one\n");
    expect(await git(dir, "rev-parse", "HEAD")).toBe(firstSha);
  });

  it("fails with git's reason for an unknown commit, and refuses option-like input", async () => {
    const dir = path.join(tmp, "ws-2");
    await expect(checkoutSource({ dir, cloneUrl: `file://${repo}`, commitSha: "1".repeat(40) })).rejects.toThrow(
      /git fetch exited with code 128/,
    );
    await expect(checkoutSource({ dir, cloneUrl: "--upload-pack=touch /tmp/x", commitSha: firstSha })).rejects.toThrow(
      /invalid clone URL/,
    );
    await expect(checkoutSource({ dir, cloneUrl: `file://${repo}`, commitSha: "--help" })).rejects.toThrow(
      /invalid commit sha/,
    );
  });

  it("never shows credentials embedded in the clone URL", async () => {
    const dir = path.join(tmp, "ws-3");
    const err = await checkoutSource({
      dir,
      cloneUrl: "https://user:s3cret@127.0.0.1:1/x.git",
      commitSha: firstSha,
    }).catch((e: unknown) => e);
    expect(String(err)).toMatch(/git fetch/);
    expect(String(err)).not.toContain("s3cret");
  });

  it("stops when aborted", async () => {
    const dir = path.join(tmp, "ws-4");
    const controller = new AbortController();
    controller.abort();
    await expect(
      checkoutSource({ dir, cloneUrl: `file://${repo}`, commitSha: firstSha, signal: controller.signal }),
    ).rejects.toThrow(/aborted/);
  });

  it("with a host mirror: asks the forge once per commit, then checks out from the mirror alone", async () => {
    const mirrorDir = path.join(tmp, "mirrors");
    const copy = path.join(tmp, "repo-copy");
    await exec("cp", ["-a", repo, copy]);
    const cloneUrl = `file://${copy}`;
    const first = await Promise.all(
      [5, 6, 7].map((i) =>
        checkoutSource({ dir: path.join(tmp, `ws-${i}`), cloneUrl, commitSha: firstSha, mirrorDir }),
      ),
    );
    expect(first).toHaveLength(3);
    for (const i of [5, 6, 7]) expect(await readFile(path.join(tmp, `ws-${i}`, "a.txt"), "utf8")).toBe("one\n");
    // The forge is gone: the commit still checks out, from the mirror.
    await rm(copy, { recursive: true, force: true });
    const dir = path.join(tmp, "ws-8");
    await checkoutSource({ dir, cloneUrl, commitSha: firstSha, mirrorDir });
    expect(await git(dir, "rev-parse", "HEAD")).toBe(firstSha);
    expect(await readFile(path.join(dir, "a.txt"), "utf8")).toBe("one\n");
    // A commit the mirror lacks still needs the forge, and says why it failed.
    await expect(
      checkoutSource({ dir: path.join(tmp, "ws-9"), cloneUrl, commitSha: "2".repeat(40), mirrorDir }),
    ).rejects.toThrow(/git fetch exited with code 128/);
  });
});
