import { createReadStream } from "node:fs";
import { lstat, mkdir, mkdtemp, readdir, readFile, readlink, realpath, rm, stat, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { gzipSync } from "node:zlib";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { MANIFEST_NAME } from "@kiln/domain";
import { CacheRejected, extractCache } from "./extract-cache.ts";
import { packCache } from "./pack-cache.ts";
import { cacheArchive, chunks, rawTar, sha256, type BuiltArchive, type RawMember } from "./test-archives.ts";

let root = "";
let stage = "";
const SENTINEL = "sentinel: must never change";
beforeEach(async () => {
  root = await realpath(await mkdtemp(path.join(os.tmpdir(), "kiln-cache-x-")));
  stage = path.join(root, "sandbox", "stage");
  await mkdir(stage, { recursive: true });
  // Beside the target, and where the classic escapes aim.
  await writeFile(path.join(root, "sentinel"), SENTINEL);
  await writeFile(path.join(root, "sandbox", "sentinel"), SENTINEL);
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

const BUDGET = { maxBytes: 1024 * 1024, maxEntries: 1000 };
const extract = (a: BuiltArchive, paths = ["deps"], budget = BUDGET) =>
  extractCache(chunks(a.gz), stage, { paths, sizeBytes: a.sizeBytes, sha256: a.sha256, ...budget });

async function expectRefused(a: BuiltArchive, why: RegExp, paths = ["deps"], budget = BUDGET): Promise<void> {
  const err = await extract(a, paths, budget).then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(CacheRejected);
  expect((err as Error).message).toMatch(why);
  // The restore removes the staging directory on any refusal; here the test does.
  await rm(stage, { recursive: true, force: true });
  await mkdir(stage);
  expect(await readFile(path.join(root, "sentinel"), "utf8")).toBe(SENTINEL);
  expect(await readFile(path.join(root, "sandbox", "sentinel"), "utf8")).toBe(SENTINEL);
  expect((await readdir(root)).sort()).toEqual(["sandbox", "sentinel"]);
}

const file = (name: string, text: string, mode = 0o644): RawMember => ({
  name,
  type: "0",
  mode,
  data: Buffer.from(text),
});
const dir = (name: string, mode = 0o755): RawMember => ({ name, type: "5", mode });

describe("an honest archive", () => {
  it("round-trips what pack-cache wrote: files, modes, nested dirs and inner symlinks", async () => {
    const ws = path.join(root, "ws");
    await mkdir(path.join(ws, "deps", "a", "b"), { recursive: true });
    await writeFile(path.join(ws, "deps", "a", "b", "lib.js"), "module.exports = 1\n");
    await writeFile(path.join(ws, "deps", "run.sh"), "#!/bin/sh\n", { mode: 0o755 });
    await (await import("node:fs/promises")).symlink("a/b/lib.js", path.join(ws, "deps", "link.js"));
    await mkdir(path.join(ws, "other"));
    await writeFile(path.join(ws, "other", "x"), "y".repeat(100_000));
    const out = path.join(root, "cache.tar.gz");
    const packed = await packCache(ws, ["deps", "other"], out, BUDGET);
    if (!packed.ok) throw new Error(packed.reason);
    expect(packed.entryCount).toBe(8);
    const s = await extractCache(createReadStream(out) as AsyncIterable<Buffer>, stage, {
      paths: ["deps", "other"],
      sizeBytes: packed.sizeBytes,
      sha256: packed.sha256,
      ...BUDGET,
    });
    expect(s).toMatchObject({ entries: 8, unpackedBytes: packed.unpackedBytes, compressedBytes: packed.sizeBytes });
    expect(await readFile(path.join(stage, "0", "a", "b", "lib.js"), "utf8")).toBe("module.exports = 1\n");
    expect((await stat(path.join(stage, "0", "run.sh"))).mode & 0o777).toBe(0o755);
    expect(await readlink(path.join(stage, "0", "link.js"))).toBe("a/b/lib.js");
    expect((await readFile(path.join(stage, "1", "x"))).length).toBe(100_000);
  });

  it("packs the same tree to the same bytes", async () => {
    const ws = path.join(root, "ws");
    await mkdir(path.join(ws, "deps"), { recursive: true });
    await writeFile(path.join(ws, "deps", "f"), "data");
    const a = await packCache(ws, ["deps"], path.join(root, "a.tgz"), BUDGET);
    const b = await packCache(ws, ["deps"], path.join(root, "b.tgz"), BUDGET);
    expect(a.ok && b.ok && a.sha256 === b.sha256).toBe(true);
  });

  it("refuses to pack a link that leads out of its cache path", async () => {
    const ws = path.join(root, "ws");
    await mkdir(path.join(ws, "deps"), { recursive: true });
    await (await import("node:fs/promises")).symlink("../../sentinel", path.join(ws, "deps", "escape"));
    expect(await packCache(ws, ["deps"], path.join(root, "c.tgz"), BUDGET)).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/outside the cache path/),
    });
  });
});

describe("hostile archives: refused, sentinel untouched", () => {
  it("path traversal with ..", async () => {
    await expectRefused(
      cacheArchive(["deps"], [dir("0"), file("0/../../sentinel", "pwned")]),
      /out of manifest order|climbs out/,
    );
    // Even when the manifest names the same hostile path.
    await expectRefused(cacheArchive(["deps"], [dir("0"), file("0/../../../sentinel", "pwned")]), /climbs out/);
  });

  it("absolute paths and members outside every declared path", async () => {
    await expectRefused(cacheArchive(["deps"], [dir("0"), file(path.join(root, "sentinel"), "pwned")]), /absolute/);
    await expectRefused(
      cacheArchive(["deps"], [dir("0"), dir("1"), file("1/x", "pwned")]),
      /outside every declared cache path/,
    );
    await expectRefused(cacheArchive(["deps"], [file("0x", "pwned")]), /no directory for cache path 0/);
  });

  it("a symlink escaping the target, and a file written through a symlink", async () => {
    await expectRefused(
      cacheArchive(["deps"], [dir("0"), { name: "0/esc", type: "2", linkname: "../../sentinel" }]),
      /points outside/,
    );
    await expectRefused(cacheArchive(["deps"], [dir("0"), { name: "0/esc", type: "2", linkname: root }]), /absolute/);
    // An innocent-looking inner link, then a member beneath it: never written through.
    await expectRefused(
      cacheArchive(["deps"], [dir("0"), dir("0/d"), { name: "0/l", type: "2", linkname: "d" }, file("0/l/x", "pwned")]),
      /not inside a directory of the archive/,
    );
  });

  it("a hardlink escaping the target", async () => {
    await expectRefused(
      cacheArchive(["deps"], [dir("0"), { name: "0/h", type: "1", linkname: "../../sentinel" }]),
      /hardlink|manifest says/,
    );
  });

  it("device files, fifos and setuid bits", async () => {
    await expectRefused(cacheArchive(["deps"], [dir("0"), { name: "0/dev", type: "3" }]), /chardev|manifest says/);
    await expectRefused(cacheArchive(["deps"], [dir("0"), { name: "0/fifo", type: "6" }]), /fifo|manifest says/);
    await expectRefused(cacheArchive(["deps"], [dir("0"), file("0/suid", "x", 0o4755)]), /setuid/);
  });

  it("a gzip bomb trips the inflated-byte budget long before the disk fills", async () => {
    // 64 MiB of zeros inside one file: ~64 KiB compressed; the budget is 1 MiB.
    const big = Buffer.alloc(64 * 1024 * 1024);
    const members = [dir("0"), { name: "0/zeros", type: "0", mode: 0o644, data: big }];
    const manifest = Buffer.from(
      JSON.stringify({
        format: 1,
        paths: ["deps"],
        entries: [
          { type: "dir", path: "0", mode: 0o755 },
          { type: "file", path: "0/zeros", mode: 0o644, size: 100, sha256: "0".repeat(64) },
        ],
      }),
    );
    const gz = gzipSync(rawTar([{ name: MANIFEST_NAME, type: "0", mode: 0o600, data: manifest }, ...members]));
    expect(gz.length).toBeLessThan(1024 * 1024);
    await expectRefused({ gz, sizeBytes: gz.length, sha256: sha256(gz) }, /another size/, ["deps"], {
      maxBytes: 1024 * 1024,
      maxEntries: 1000,
    });
    // Same bomb with a manifest that admits the size: the byte budget refuses it before writing.
    const admitted = cacheArchive(["deps"], members);
    await expectRefused(admitted, /more than 1048576 bytes/, ["deps"], { maxBytes: 1024 * 1024, maxEntries: 1000 });
    // The classic bomb: a huge stream of zeros after the end of the archive.
    const zeros = gzipSync(
      Buffer.concat([
        rawTar(
          [
            {
              name: MANIFEST_NAME,
              type: "0",
              mode: 0o600,
              data: Buffer.from(
                JSON.stringify({ format: 1, paths: ["deps"], entries: [{ type: "dir", path: "0", mode: 0o755 }] }),
              ),
            },
            dir("0"),
          ],
          false,
        ),
        Buffer.alloc(64 * 1024 * 1024),
      ]),
    );
    await expectRefused({ gz: zeros, sizeBytes: zeros.length, sha256: sha256(zeros) }, /inflates/, ["deps"], {
      maxBytes: 1024 * 1024,
      maxEntries: 1000,
    });
  });

  it("an archive above the byte or entry budget", async () => {
    const members = [dir("0"), file("0/a", "x".repeat(600_000)), file("0/b", "y".repeat(600_000))];
    await expectRefused(cacheArchive(["deps"], members), /more than 1048576 bytes/);
    const many = [dir("0"), ...Array.from({ length: 20 }, (_, i) => file(`0/f${i}`, "z"))];
    await expectRefused(cacheArchive(["deps"], many), /more than 10 entries/, ["deps"], {
      maxBytes: 1024 * 1024,
      maxEntries: 10,
    });
  });

  it("members that disagree with the manifest, or a manifest for other paths", async () => {
    const honest = [dir("0"), file("0/a", "good")];
    const lying = Buffer.from(
      JSON.stringify({
        format: 1,
        paths: ["deps"],
        entries: [
          { type: "dir", path: "0", mode: 0o755 },
          { type: "file", path: "0/a", mode: 0o644, size: 4, sha256: sha256(Buffer.from("evil")) },
        ],
      }),
    );
    await expectRefused(cacheArchive(["deps"], honest, lying), /does not match its manifest sha256/);
    await expectRefused(cacheArchive(["other"], honest), /other cache paths/);
    await expectRefused(
      cacheArchive(
        ["deps"],
        [...honest, file("0/extra", "x")],
        Buffer.from(
          JSON.stringify({
            format: 1,
            paths: ["deps"],
            entries: [
              { type: "dir", path: "0", mode: 0o755 },
              { type: "file", path: "0/a", mode: 0o644, size: 4, sha256: sha256(Buffer.from("good")) },
            ],
          }),
        ),
      ),
      /not in the manifest/,
    );
  });

  it("a malformed gzip or tar stream", async () => {
    const notGzip = Buffer.from("this is not gzip at all");
    await expectRefused({ gz: notGzip, sizeBytes: notGzip.length, sha256: sha256(notGzip) }, /malformed/);
    const badTar = gzipSync(Buffer.alloc(2048, 7));
    await expectRefused({ gz: badTar, sizeBytes: badTar.length, sha256: sha256(badTar) }, /malformed/);
  });

  it("tampered archive bytes: a digest mismatch even when every member is consistent", async () => {
    const a = cacheArchive(["deps"], [dir("0"), file("0/a", "good")]);
    const other = cacheArchive(["deps"], [dir("0"), file("0/a", "evil")]);
    await expect(
      extractCache(chunks(other.gz), stage, { paths: ["deps"], sizeBytes: a.sizeBytes, sha256: a.sha256, ...BUDGET }),
    ).rejects.toThrow(/digest mismatch|longer/);
    const truncated = a.gz.subarray(0, a.gz.length - 10);
    await expect(
      extractCache(chunks(truncated), stage, { paths: ["deps"], sizeBytes: a.sizeBytes, sha256: a.sha256, ...BUDGET }),
    ).rejects.toThrow();
    expect(await lstat(path.join(root, "sentinel")).then(() => true)).toBe(true);
  });
});
