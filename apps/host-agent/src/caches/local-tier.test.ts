import { mkdtemp, readdir, rm, utimes, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { LocalCacheTier } from "./local-tier.ts";

let dir = "";
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "kiln-tier-"));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const sha = (c: string) => c.repeat(64);

describe("the node-local tier", () => {
  it("keeps archives by digest and evicts the least recently used beyond its budget", async () => {
    const tier = new LocalCacheTier(path.join(dir, "t"), 2500);
    await tier.init();
    for (const [i, c] of ["a", "b", "c"].entries()) {
      const tmp = tier.tempPath(sha(c), "x");
      await writeFile(tmp, Buffer.alloc(1000));
      await tier.adopt(tmp, sha(c));
      const t = new Date(Date.now() - (10 - i) * 60_000);
      await utimes(tier.pathFor(sha(c)), t, t);
    }
    // Three files of 1000 bytes over a 2500-byte budget: the oldest went when the third arrived.
    expect((await readdir(tier.dir)).sort()).toEqual([`${sha("b")}.tar.gz`, `${sha("c")}.tar.gz`]);
    // A lookup is a use: b becomes the newest, so c is the one evicted next.
    expect(await tier.lookup(sha("b"))).toBe(tier.pathFor(sha("b")));
    const tmp = tier.tempPath(sha("d"), "y");
    await writeFile(tmp, Buffer.alloc(1000));
    await tier.adopt(tmp, sha("d"));
    expect((await readdir(tier.dir)).sort()).toEqual([`${sha("b")}.tar.gz`, `${sha("d")}.tar.gz`]);
    expect(await tier.lookup(sha("a"))).toBeNull();
  });

  it("drops temp files a crashed agent left and refuses names that are not digests", async () => {
    const tier = new LocalCacheTier(path.join(dir, "t"), 10_000);
    await tier.init();
    await writeFile(tier.tempPath(sha("e"), "crash"), "half");
    await tier.init();
    expect(await readdir(tier.dir)).toEqual([]);
    expect(() => tier.pathFor("../../etc/passwd")).toThrow();
  });
});
