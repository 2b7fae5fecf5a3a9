import { execFile } from "node:child_process";
import { lstat, mkdir, mkdtemp, readFile, readdir, readlink, rm, stat, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { promisify } from "node:util";
import { writeTar, type TarEntry } from "@kiln/oci";
import * as tar from "tar";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { LayerApplier } from "./safe-unpack.ts";
import { readTar } from "../shared/tar-reader.ts";

const execFileAsync = promisify(execFile);
let base: string;
let root: string;
let sentinel: string;
const BIG = { maxBytes: 1 << 30, maxEntries: 100_000 };

beforeEach(async () => {
  base = await mkdtemp(path.join(os.tmpdir(), "kiln-unpack-"));
  root = path.join(base, "root");
  await mkdir(root);
  await mkdir(path.join(base, "outside"));
  sentinel = path.join(base, "outside", "sentinel");
  await writeFile(sentinel, "untouched");
});
afterEach(async () => {
  await rm(base, { recursive: true, force: true });
});

async function apply(layers: TarEntry[][], budget = BIG): Promise<LayerApplier> {
  const applier = new LayerApplier(root, budget);
  for (const entries of layers) await applier.apply(readTar(Readable.from([writeTar(entries)])));
  await applier.finish();
  return applier;
}

async function expectRefused(entries: TarEntry[], pattern: RegExp): Promise<void> {
  await expect(apply([entries])).rejects.toMatchObject({
    code: "IMAGE.UNSAFE_LAYER",
    message: expect.stringMatching(pattern),
  });
  expect(await readFile(sentinel, "utf8")).toBe("untouched");
  expect((await readdir(path.join(base, "outside"))).sort()).toEqual(["sentinel"]);
}

describe("safe unpack", () => {
  it("unpacks files, dirs, links and modes; strips setuid/setgid; skips device nodes and fifos", async () => {
    const a = await apply([
      [
        { path: "bin", type: "dir" },
        { path: "bin/tool", type: "file", mode: 0o4755, data: "#!/bin/sh\n" },
        { path: "bin/sg", type: "file", mode: 0o2711, data: "x" },
        { path: "bin/sh", type: "symlink", linkname: "tool" },
        { path: "usr/bin/abs", type: "symlink", linkname: "/bin/tool" },
        { path: "bin/hard", type: "hardlink", linkname: "bin/tool" },
        { path: "tmp", type: "dir", mode: 0o1777 },
        { path: "ro", type: "dir", mode: 0o555 },
        { path: "ro/inner", type: "file", data: "inside a read-only dir" },
        { path: "dev/sda", type: "blockdev" },
        { path: "dev/null", type: "chardev" },
        { path: "run/pipe", type: "fifo" },
      ],
    ]);
    expect((await stat(path.join(root, "bin/tool"))).mode & 0o7777).toBe(0o755);
    expect((await stat(path.join(root, "bin/sg"))).mode & 0o7777).toBe(0o711);
    expect(await readlink(path.join(root, "bin/sh"))).toBe("tool");
    expect(await readlink(path.join(root, "usr/bin/abs"))).toBe("/bin/tool");
    expect((await stat(path.join(root, "bin/hard"))).ino).toBe((await stat(path.join(root, "bin/tool"))).ino);
    expect((await stat(path.join(root, "tmp"))).mode & 0o7777).toBe(0o1777);
    expect((await stat(path.join(root, "ro"))).mode & 0o777).toBe(0o555);
    expect(await readFile(path.join(root, "ro/inner"), "utf8")).toBe("inside a read-only dir");
    await expect(lstat(path.join(root, "dev/sda"))).rejects.toThrow();
    await expect(lstat(path.join(root, "dev/null"))).rejects.toThrow();
    await expect(lstat(path.join(root, "run/pipe"))).rejects.toThrow();
    expect(a.stats).toMatchObject({
      files: 3,
      symlinks: 2,
      hardlinks: 1,
      strippedSetid: 2,
      skipped: { devices: 2, fifos: 1 },
    });
  });

  it("refuses path traversal and absolute names", async () => {
    await expectRefused([{ path: "../outside/sentinel", type: "file", data: "pwned" }], /climbs out/);
    await expectRefused([{ path: "a/../../outside/sentinel", type: "file", data: "pwned" }], /climbs out/);
    await expectRefused([{ path: sentinel, type: "file", data: "pwned" }], /absolute/);
  });

  it("refuses writing through a symlink (absolute or relative) placed by the same or an earlier layer", async () => {
    await expectRefused(
      [
        { path: "evil", type: "symlink", linkname: path.join(base, "outside") },
        { path: "evil/sentinel", type: "file", data: "pwned" },
      ],
      /through the symlink/,
    );
    await rm(root, { recursive: true, force: true });
    await mkdir(root);
    // Layer 1 plants the link, layer 2 writes through it.
    await expect(
      apply([
        [{ path: "d", type: "symlink", linkname: path.join(base, "outside") }],
        [{ path: "d/new", type: "file", data: "x" }],
      ]),
    ).rejects.toMatchObject({ code: "IMAGE.UNSAFE_LAYER" });
    expect((await readdir(path.join(base, "outside"))).sort()).toEqual(["sentinel"]);
  });

  it("skips relative symlinks that climb above the root, and replaces (never follows) a symlink at a file's path", async () => {
    const a = await apply([
      [
        { path: "up", type: "symlink", linkname: "../../outside/sentinel" },
        { path: "x", type: "symlink", linkname: sentinel },
        { path: "x", type: "file", data: "replaced the link" },
      ],
    ]);
    expect(a.stats.skipped.escapingSymlinks).toBe(1);
    await expect(lstat(path.join(root, "up"))).rejects.toThrow();
    expect((await lstat(path.join(root, "x"))).isFile()).toBe(true);
    expect(await readFile(path.join(root, "x"), "utf8")).toBe("replaced the link");
    expect(await readFile(sentinel, "utf8")).toBe("untouched");
  });

  it("refuses hardlinks that escape or point at a non-file, and never writes through a hardlink", async () => {
    await expectRefused([{ path: "h", type: "hardlink", linkname: "../outside/sentinel" }], /climbs out/);
    await expectRefused([{ path: "h", type: "hardlink", linkname: sentinel }], /absolute/);
    await expectRefused(
      [
        { path: "l", type: "symlink", linkname: sentinel },
        { path: "h", type: "hardlink", linkname: "l" },
      ],
      /not a regular file/,
    );
    await rm(root, { recursive: true, force: true });
    await mkdir(root);
    await apply([
      [
        { path: "a", type: "file", data: "orig" },
        { path: "b", type: "hardlink", linkname: "a" },
        { path: "b", type: "file", data: "new" },
      ],
    ]);
    expect(await readFile(path.join(root, "a"), "utf8")).toBe("orig");
    expect(await readFile(path.join(root, "b"), "utf8")).toBe("new");
  });

  it("applies whiteouts and opaque whiteouts to lower layers only", async () => {
    await apply([
      [
        { path: "d/a", type: "file", data: "a" },
        { path: "d/b", type: "file", data: "b" },
        { path: "top", type: "file", data: "t" },
        { path: "o/lower", type: "file", data: "l" },
      ],
      [
        { path: "d/.wh.a", type: "file" },
        { path: ".wh.top", type: "file" },
        { path: "o/same-layer", type: "file", data: "s" },
        { path: "o/.wh..wh..opq", type: "file" },
      ],
    ]);
    expect((await readdir(path.join(root, "d"))).sort()).toEqual(["b"]);
    expect((await readdir(root)).sort()).toEqual(["d", "o"]);
    expect((await readdir(path.join(root, "o"))).sort()).toEqual(["same-layer"]);
    await expect(apply([[{ path: "d/.wh...", type: "file" }]])).rejects.toMatchObject({ code: "IMAGE.UNSAFE_LAYER" });
  });

  it("never applies a directory's deferred mode to what replaced it (a symlink out of the root)", async () => {
    const outside = path.join(base, "outside");
    const before = (await stat(outside)).mode & 0o7777;
    await apply([
      [
        { path: "d", type: "dir", mode: 0o700 },
        { path: "e/f", type: "dir", mode: 0o711 },
      ],
      [
        { path: ".wh.d", type: "file" },
        { path: "d", type: "symlink", linkname: outside },
        { path: "e", type: "symlink", linkname: outside },
      ],
    ]);
    expect((await stat(outside)).mode & 0o7777).toBe(before);
    expect(await readlink(path.join(root, "d"))).toBe(outside);
  });

  it("enforces entry and byte budgets", async () => {
    const many: TarEntry[] = Array.from({ length: 5 }, (_, i) => ({ path: `f${i}`, type: "file", data: "x" }));
    await expect(apply([many], { maxBytes: 1 << 20, maxEntries: 3 })).rejects.toMatchObject({
      code: "IMAGE.TOO_LARGE",
    });
    await rm(root, { recursive: true, force: true });
    await mkdir(root);
    await expect(
      apply([[{ path: "big", type: "file", data: Buffer.alloc(4096) }]], { maxBytes: 1000, maxEntries: 10 }),
    ).rejects.toMatchObject({ code: "IMAGE.TOO_LARGE" });
  });

  it("reads what node-tar writes (pax long names) and rejects corrupt headers", async () => {
    const src = path.join(base, "src");
    const long = `${"d".repeat(120)}/${"n".repeat(130)}.txt`;
    await mkdir(path.join(src, path.dirname(long)), { recursive: true });
    await writeFile(path.join(src, long), "long name");
    const chunks: Buffer[] = [];
    for await (const c of tar.create({ cwd: src, portable: true }, ["."])) chunks.push(Buffer.from(c as Buffer));
    const applier = new LayerApplier(root, BIG);
    await applier.apply(readTar(Readable.from([Buffer.concat(chunks)])));
    expect(await readFile(path.join(root, long), "utf8")).toBe("long name");
    // GNU tar's own format (././@LongLink records, "ustar " magic), as docker-era layers often are.
    const gnu = await execFileAsync("tar", ["--format=gnu", "-C", src, "-cf", "-", "."], {
      encoding: "buffer",
      maxBuffer: 1 << 24,
    });
    await rm(root, { recursive: true, force: true });
    await mkdir(root);
    await new LayerApplier(root, BIG).apply(readTar(Readable.from([gnu.stdout])));
    expect(await readFile(path.join(root, long), "utf8")).toBe("long name");
    const corrupt = writeTar([{ path: "f", type: "file", data: "x" }]);
    corrupt[0] = "g".charCodeAt(0);
    await expect(new LayerApplier(root, BIG).apply(readTar(Readable.from([corrupt])))).rejects.toMatchObject({
      code: "IMAGE.BAD_MANIFEST",
    });
  });
});
