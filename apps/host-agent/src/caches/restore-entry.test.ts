import { mkdir, mkdtemp, readdir, readFile, realpath, rm, writeFile } from "node:fs/promises";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { GetObjectCommand, PutObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { getSignedUrl } from "@aws-sdk/s3-request-presigner";
import { startS3, type S3Handle } from "@kiln/testkit";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createLogger } from "@kiln/logger";
import { LocalCacheTier } from "./local-tier.ts";
import { restoreEntry } from "./restore-cache.ts";
import { cacheArchive, type BuiltArchive, type RawMember } from "./test-archives.ts";

// The restore path with real object storage (s3rver) and real files: what reaches the workspace,
// and what is left behind (nothing) when an archive is hostile or its bytes were tampered with.
let s3: S3Handle;
let s3Dir = "";
let client: S3Client;
let root = "";
let ws = "";
let tier: LocalCacheTier;
const SENTINEL = "sentinel: must never change";
const quiet = createLogger({ service: "test" }, () => {});
const limits = { maxBytes: 1024 * 1024, maxEntries: 1000, timeoutMs: 30_000 };

beforeAll(async () => {
  s3Dir = await mkdtemp(path.join(os.tmpdir(), "kiln-cache-s3-"));
  s3 = await startS3({ dataDir: s3Dir, bucket: "kiln" });
  client = new S3Client({
    region: "us-east-1",
    endpoint: s3.endpoint,
    forcePathStyle: true,
    credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
  });
});
afterAll(async () => {
  client.destroy();
  await s3.stop();
  await rm(s3Dir, { recursive: true, force: true });
});
beforeEach(async () => {
  root = await realpath(await mkdtemp(path.join(os.tmpdir(), "kiln-cache-r-")));
  ws = path.join(root, "sandbox", "workspace");
  await mkdir(ws, { recursive: true });
  await writeFile(path.join(root, "sentinel"), SENTINEL);
  await writeFile(path.join(root, "sandbox", "sentinel"), SENTINEL);
  tier = new LocalCacheTier(path.join(root, "tier"), 64 * 1024 * 1024);
  await tier.init();
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

let n = 0;
async function upload(body: Buffer): Promise<string> {
  const key = `caches/test/${++n}.tar.gz`;
  await client.send(new PutObjectCommand({ Bucket: "kiln", Key: key, Body: body }));
  return getSignedUrl(client, new GetObjectCommand({ Bucket: "kiln", Key: key }), { expiresIn: 300 });
}

const ctx = () => ({
  signal: new AbortController().signal,
  workspaceDir: ws,
  scratchDir: path.dirname(ws),
  localTier: tier,
  limits,
  log: quiet,
});
const grantFor = async (a: BuiltArchive, stored: Buffer = a.gz) => ({
  sha256: a.sha256,
  size_bytes: a.sizeBytes,
  url: await upload(stored),
});
const file = (name: string, text: string): RawMember => ({ name, type: "0", mode: 0o644, data: Buffer.from(text) });
const dir = (name: string): RawMember => ({ name, type: "5", mode: 0o755 });
const HONEST = [
  dir("0"),
  dir("0/sub"),
  file("0/sub/lib.js", "module.exports = 42\n"),
  { name: "0/link", type: "2", linkname: "sub/lib.js" },
];

async function expectCleanMiss(r: Awaited<ReturnType<typeof restoreEntry>>, why: RegExp): Promise<void> {
  expect(r).toMatchObject({ ok: false, reason: expect.stringMatching(why) });
  expect(await readdir(ws)).toEqual([]);
  expect((await readdir(path.join(root, "sandbox"))).sort()).toEqual(["sentinel", "workspace"]);
  expect(await readFile(path.join(root, "sentinel"), "utf8")).toBe(SENTINEL);
  expect(await readFile(path.join(root, "sandbox", "sentinel"), "utf8")).toBe(SENTINEL);
  expect(await readdir(tier.dir)).toEqual([]);
}

describe("restoring an entry", () => {
  it("hits object storage first, keeps the verified archive, then hits the node-local tier", async () => {
    const a = cacheArchive(["deps"], HONEST);
    const g = await grantFor(a);
    expect(await restoreEntry(ctx(), ["deps"], g)).toEqual({ ok: true, tier: "remote" });
    expect(await readFile(path.join(ws, "deps", "link"), "utf8")).toBe("module.exports = 42\n");
    expect(await readdir(tier.dir)).toEqual([`${a.sha256}.tar.gz`]);
    await rm(path.join(ws, "deps"), { recursive: true });
    expect(await restoreEntry(ctx(), ["deps"], g)).toEqual({ ok: true, tier: "local" });
    expect(await readFile(path.join(ws, "deps", "sub", "lib.js"), "utf8")).toBe("module.exports = 42\n");
  });

  it("drops a corrupted node-local copy and falls back to object storage", async () => {
    const a = cacheArchive(["deps"], HONEST);
    const planted = cacheArchive(["deps"], [dir("0"), file("0/evil", "x")]);
    await writeFile(tier.pathFor(a.sha256), planted.gz);
    expect(await restoreEntry(ctx(), ["deps"], await grantFor(a))).toEqual({ ok: true, tier: "remote" });
    expect(await readdir(path.join(ws, "deps"))).toEqual(["link", "sub"]);
  });

  it("hostile archives from object storage are a clean miss: traversal, symlink and hardlink escapes", async () => {
    for (const members of [
      [dir("0"), file("0/../../../sentinel", "pwned")],
      [dir("0"), { name: "0/esc", type: "2", linkname: "../../../sentinel" }],
      [dir("0"), dir("0/d"), { name: "0/l", type: "2", linkname: "d" }, file("0/l/x", "pwned")],
      [dir("0"), { name: "0/h", type: "1", linkname: "../../../sentinel" }],
    ] as RawMember[][]) {
      const a = cacheArchive(["deps"], members);
      await expectCleanMiss(await restoreEntry(ctx(), ["deps"], await grantFor(a)), /object storage copy rejected/);
    }
  });

  it("a gzip bomb and an archive above the budget are a clean miss", async () => {
    const bomb = cacheArchive(
      ["deps"],
      [dir("0"), { name: "0/zeros", type: "0", mode: 0o644, data: Buffer.alloc(32 * 1024 * 1024) }],
    );
    expect(bomb.sizeBytes).toBeLessThan(1024 * 1024);
    await expectCleanMiss(await restoreEntry(ctx(), ["deps"], await grantFor(bomb)), /more than 1048576 bytes/);
  });

  it("tampered blob bytes in object storage: a miss, nothing extracted, nothing kept", async () => {
    const a = cacheArchive(["deps"], HONEST);
    const tampered = Buffer.from(a.gz);
    tampered[tampered.length - 12] = (tampered[tampered.length - 12] ?? 0) ^ 0x55;
    await expectCleanMiss(
      await restoreEntry(ctx(), ["deps"], await grantFor(a, tampered)),
      /object storage copy rejected/,
    );
    // Other bytes that are a perfectly valid archive: the digest still says no.
    const other = cacheArchive(["deps"], [dir("0"), file("0/sub", "other")]);
    await expectCleanMiss(await restoreEntry(ctx(), ["deps"], await grantFor(a, other.gz)), /digest mismatch|longer/);
  });

  it("never restores over what the checkout already has at a cache path", async () => {
    await mkdir(path.join(ws, "deps"));
    await writeFile(path.join(ws, "deps", "committed"), "from git");
    const a = cacheArchive(["deps"], HONEST);
    expect(await restoreEntry(ctx(), ["deps"], await grantFor(a))).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/already exists/),
    });
    expect(await readdir(path.join(ws, "deps"))).toEqual(["committed"]);
  });

  it("a stalled object store is a miss once the restore times out", async () => {
    // An endpoint that sends the headers and half the bytes, then nothing: a store that stalls.
    const a = cacheArchive(["deps"], HONEST);
    const server = http.createServer((_req, res) => {
      res.writeHead(200, { "content-length": a.sizeBytes });
      res.write(a.gz.subarray(0, Math.floor(a.sizeBytes / 2)));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/blob`;
      const r = await restoreEntry({ ...ctx(), limits: { ...limits, timeoutMs: 300 } }, ["deps"], {
        sha256: a.sha256,
        size_bytes: a.sizeBytes,
        url,
      });
      await expectCleanMiss(r, /timed out/);
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });
});
