// The real projects' download path from the hostile side: a tarball that is not the pinned one, a
// source that answers 404 or not at all, and a cache whose file was tampered with. Served by a real
// HTTP server on 127.0.0.1 with a tarball made by tar here.
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { createServer, type Server } from "node:http";
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { realProjectFiles, realProjectsCacheDir, type RealProjectSource } from "./real-project-sources.ts";

let dir = "";
let tarball: Buffer;
let server: Server;
let base = "";
let hits = 0;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "kiln-real-src-test-"));
  await mkdir(path.join(dir, "proj-1.0", "src"), { recursive: true });
  await writeFile(path.join(dir, "proj-1.0", "README"), "hello\n");
  await writeFile(path.join(dir, "proj-1.0", "src", "lib.c"), "int x;\n");
  await promisify(execFile)("tar", ["-czf", path.join(dir, "proj.tar.gz"), "-C", dir, "proj-1.0"]);
  tarball = await readFile(path.join(dir, "proj.tar.gz"));
  server = createServer((req, res) => {
    hits++;
    if (req.url === "/proj.tar.gz") res.end(tarball);
    else res.writeHead(404).end();
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((done) => server?.close(done));
  if (dir) await rm(dir, { recursive: true, force: true });
});

const source = (over: Partial<RealProjectSource> = {}): RealProjectSource => ({
  url: `${base}/proj.tar.gz`,
  sha256: createHash("sha256").update(tarball).digest("hex"),
  topDir: "proj-1.0",
  ...over,
});

describe("real project sources: pinned, verified, cached", () => {
  it("unpacks the pinned tarball below its top folder and serves the next use from the cache", async () => {
    const cache = path.join(dir, "cache-ok");
    const before = hits;
    expect(await realProjectFiles(source(), cache)).toEqual({ README: "hello\n", "src/lib.c": "int x;\n" });
    expect(await realProjectFiles(source(), cache)).toEqual({ README: "hello\n", "src/lib.c": "int x;\n" });
    expect(hits - before).toBe(1);
  });

  it("refuses a tarball whose SHA-256 is not the pinned one, naming both, and caches nothing", async () => {
    const cache = path.join(dir, "cache-bad");
    const wrong = "0".repeat(64);
    await expect(realProjectFiles(source({ sha256: wrong }), cache)).rejects.toThrow(
      new RegExp(`has SHA-256 ${source().sha256}, expected ${wrong}`),
    );
    expect(await readdir(cache).catch(() => [])).toEqual([]);
  });

  it("fails loudly on a 404 and on an unreachable host", async () => {
    await expect(realProjectFiles(source({ url: `${base}/gone.tar.gz` }), path.join(dir, "c404"))).rejects.toThrow(
      /gone\.tar\.gz answered HTTP 404/,
    );
    await expect(
      realProjectFiles(source({ url: "http://127.0.0.1:1/proj.tar.gz" }), path.join(dir, "cdown")),
    ).rejects.toThrow(/downloading http:\/\/127\.0\.0\.1:1\/proj\.tar\.gz failed/);
  });

  it("does not trust a tampered cache: the file is fetched again and checked", async () => {
    const cache = path.join(dir, "cache-tampered");
    await realProjectFiles(source(), cache);
    const [name] = await readdir(cache);
    await writeFile(path.join(cache, name!), "not the tarball");
    const before = hits;
    expect(await realProjectFiles(source(), cache)).toHaveProperty("README", "hello\n");
    expect(hits - before).toBe(1);
  });

  it("caches in ~/.cache/kiln/real-projects unless KILN_REAL_PROJECTS_CACHE says where", () => {
    expect(realProjectsCacheDir({})).toBe(path.join(os.homedir(), ".cache", "kiln", "real-projects"));
    expect(realProjectsCacheDir({ XDG_CACHE_HOME: "/x" })).toBe("/x/kiln/real-projects");
    expect(realProjectsCacheDir({ KILN_REAL_PROJECTS_CACHE: "/c" })).toBe("/c");
  });
});
