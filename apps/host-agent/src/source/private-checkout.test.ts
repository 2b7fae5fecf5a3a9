// A private repository (issue 28): a real git smart-HTTP server that answers 401 without HTTP basic
// auth, checked out with the repo's forge credential. Attacked from the hostile side: the token must
// be nowhere in the workspace (.git/config, FETCH_HEAD, any file), in an error, or in the argv of a
// git process; another repo registering the same URL without it is never served from the mirror.
import { execFile } from "node:child_process";
import { mkdtemp, readdir, readFile, rm, stat } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { startGitServer, type TestGitRepo, type TestGitServer } from "@kiln/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkoutSource, SourceAuthError } from "./git-checkout.ts";

const exec = promisify(execFile);
const TOKEN = "ghs_PrivateCheckoutToken0123456789abcdef";
let tmp: string;
let server: TestGitServer;
let repo: TestGitRepo;

beforeAll(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), "kiln-private-checkout-"));
  server = await startGitServer({
    rootDir: path.join(tmp, "forge"),
    basicAuth: { username: "x-access-token", password: TOKEN },
  });
  repo = await server.createRepo("acme/secret-app", { "README.md": "private\n" });
});

afterAll(async () => {
  await server.stop();
  await rm(tmp, { recursive: true, force: true });
});

const cred = (password = TOKEN, scope = "repo-a") => ({ username: "x-access-token", password, scope });

/** Every file under dir, read as bytes: the token must be in none of them. */
async function filesContaining(dir: string, needle: string): Promise<string[]> {
  const hits: string[] = [];
  const walk = async (d: string): Promise<void> => {
    for (const e of await readdir(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) await walk(p);
      else if (e.isFile() && (await readFile(p)).includes(needle)) hits.push(p);
    }
  };
  await walk(dir);
  return hits;
}

describe("checkout of a private repository with its forge credential", () => {
  it("is refused by the server without a credential, as a repo (user) failure", async () => {
    const err = await checkoutSource({
      dir: path.join(tmp, "ws-none"),
      cloneUrl: repo.cloneUrl,
      commitSha: repo.headSha,
      source: server.sourcePolicy,
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SourceAuthError);
    expect((err as SourceAuthError).code).toBe("SOURCE.AUTH_REFUSED");
    expect(String(err)).toMatch(/has none/);
  });

  it("checks out with the credential, which is left in no file of the workspace", async () => {
    const dir = path.join(tmp, "ws-ok");
    await checkoutSource({
      dir,
      cloneUrl: repo.cloneUrl,
      commitSha: repo.headSha,
      source: server.sourcePolicy,
      credential: cred(),
    });
    expect(await readFile(path.join(dir, "README.md"), "utf8")).toBe("private\n");
    const basic = Buffer.from(`x-access-token:${TOKEN}`).toString("base64");
    for (const needle of [TOKEN, basic, "x-access-token", "extraHeader", "extraheader"])
      expect(await filesContaining(dir, needle), needle).toEqual([]);
    // The workspace's git knows the commit only, no remote, no credential.
    const { stdout } = await exec("git", ["-C", dir, "config", "--list", "--local"]);
    expect(stdout).not.toMatch(/remote\.|http\.|credential/);
  });

  it("a wrong (revoked) token fails with a clear message that never shows either token", async () => {
    const wrong = "ghs_RevokedToken99999999999999999999";
    const err = await checkoutSource({
      dir: path.join(tmp, "ws-wrong"),
      cloneUrl: repo.cloneUrl,
      commitSha: repo.headSha,
      source: server.sourcePolicy,
      credential: cred(wrong),
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SourceAuthError);
    expect(String(err)).toMatch(/refused the repository's credential/);
    expect(String(err)).not.toContain(wrong);
    expect(String(err)).not.toContain(TOKEN);
  });

  it("through the host mirror: the credential fills a mirror no credential-less repo of the same URL is served from", async () => {
    const mirrorDir = path.join(tmp, "mirrors");
    const dir = path.join(tmp, "ws-mirror-a");
    await checkoutSource({
      dir,
      cloneUrl: repo.cloneUrl,
      commitSha: repo.headSha,
      source: server.sourcePolicy,
      mirrorDir,
      credential: cred(),
    });
    expect(await readFile(path.join(dir, "README.md"), "utf8")).toBe("private\n");
    expect(await filesContaining(mirrorDir, TOKEN)).toEqual([]);
    expect(await filesContaining(dir, TOKEN)).toEqual([]);
    // Another org registers the very same URL with no credential: the private commit is in this
    // host's mirror, but it is not theirs to read.
    const refusedBefore = server.refusedAuth;
    const err = await checkoutSource({
      dir: path.join(tmp, "ws-mirror-b"),
      cloneUrl: repo.cloneUrl,
      commitSha: repo.headSha,
      source: server.sourcePolicy,
      mirrorDir,
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SourceAuthError);
    expect(server.refusedAuth).toBeGreaterThan(refusedBefore);
    await expect(stat(path.join(tmp, "ws-mirror-b", "README.md"))).rejects.toThrow();
    // Nor with a credential of another scope (another repo's token that happens to work elsewhere).
    const other = path.join(tmp, "ws-mirror-c");
    await checkoutSource({
      dir: other,
      cloneUrl: repo.cloneUrl,
      commitSha: repo.headSha,
      source: server.sourcePolicy,
      mirrorDir,
      credential: cred(TOKEN, "repo-b"),
    });
    expect((await readdir(mirrorDir)).length).toBe(3);
  });
});
