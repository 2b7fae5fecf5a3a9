// Proves the test git server behaves like a real forge for the way Kiln runners fetch code:
// an empty repo + `git fetch --depth 1 <url> <sha>`, including shas that are no longer the tip.
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runGit, startGitServer, type TestGitServer } from "./git-server.ts";

let tmp: string;
let server: TestGitServer;

beforeAll(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), "kiln-git-test-"));
  server = await startGitServer({ rootDir: path.join(tmp, "repos") });
});

afterAll(async () => {
  await server?.stop();
  await rm(tmp, { recursive: true, force: true });
});

/** Fetches `sha` into a brand-new repo the way a runner does and returns that repo's dir. */
async function fetchSha(url: string, sha: string, protocol: "0" | "2" = "2"): Promise<string> {
  const dir = await mkdtemp(path.join(tmp, "checkout-"));
  await runGit(dir, ["init", "-q"]);
  await runGit(dir, ["-c", `protocol.version=${protocol}`, "fetch", "-q", "--depth", "1", url, sha]);
  return dir;
}

describe("startGitServer", () => {
  it("serves a repo that can be fetched by sha over smart HTTP", async () => {
    const repo = await server.createRepo("acme/widgets", { "README.md": "hello\n", "src/app.ts": "export {};\n" });
    expect(repo.cloneUrl).toBe(`${server.baseUrl}/acme/widgets.git`);
    expect(repo.headSha).toMatch(/^[0-9a-f]{40}$/);

    const dir = await fetchSha(repo.cloneUrl, repo.headSha);
    expect(await runGit(dir, ["rev-parse", "FETCH_HEAD"])).toBe(repo.headSha);
    expect(await runGit(dir, ["show", "FETCH_HEAD:README.md"])).toBe("hello");
    expect(await runGit(dir, ["show", "FETCH_HEAD:src/app.ts"])).toBe("export {};");

    // The advertised branch is there too (ls-remote exercises the info/refs endpoint).
    expect(await runGit(tmp, ["ls-remote", repo.cloneUrl])).toContain(`${repo.headSha}\trefs/heads/main`);
  });

  it("keeps old commits fetchable by id after new commits (protocol v2 and v0)", async () => {
    const repo = await server.createRepo("pinned", { "a.txt": "one\n", "gone.txt": "x\n" }, { branch: "trunk" });
    const first = repo.headSha;
    const second = await repo.commit({ "a.txt": "two\n", "gone.txt": null, "dir/new.txt": "new\n" }, "second");
    expect(second).not.toBe(first);
    expect(repo.headSha).toBe(second);

    for (const protocol of ["2", "0"] as const) {
      // v0 only serves a non-tip sha because of uploadpack.allow*SHA1InWant.
      const old = await fetchSha(repo.cloneUrl, first, protocol);
      expect(await runGit(old, ["show", "FETCH_HEAD:a.txt"])).toBe("one");
      expect(await runGit(old, ["show", "FETCH_HEAD:gone.txt"])).toBe("x");
    }

    const tip = await fetchSha(repo.cloneUrl, second);
    expect(await runGit(tip, ["show", "FETCH_HEAD:a.txt"])).toBe("two");
    expect(await runGit(tip, ["show", "FETCH_HEAD:dir/new.txt"])).toBe("new");
    await expect(runGit(tip, ["show", "FETCH_HEAD:gone.txt"])).rejects.toThrow();
    expect(await runGit(tmp, ["ls-remote", repo.cloneUrl])).toContain(`${second}\trefs/heads/trunk`);
  });

  it("returns 404 for unknown repos and rejects bad names", async () => {
    const res = await fetch(`${server.baseUrl}/nope.git/info/refs?service=git-upload-pack`);
    expect(res.status).toBe(404);
    await expect(server.createRepo("../escape", {})).rejects.toThrow(/invalid repo name/);
  });
});
