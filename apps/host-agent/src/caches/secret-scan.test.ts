import { mkdtemp, mkdir, rm, writeFile } from "node:fs/promises";
import { randomBytes } from "node:crypto";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { packCache } from "./pack-cache.ts";
import { archiveContainsSecret } from "./secret-scan.ts";

// A job that writes its secret into a cached directory must not get that directory saved: the
// archive (gzip'd tar, as packed for a real save) is scanned for the values the job received.
const dirs: string[] = [];
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

async function packed(files: Record<string, Buffer | string>): Promise<string> {
  const ws = await mkdtemp(path.join(tmpdir(), "kiln-scan-"));
  dirs.push(ws);
  await mkdir(path.join(ws, "deps"));
  for (const [name, body] of Object.entries(files)) await writeFile(path.join(ws, "deps", name), body);
  const out = path.join(ws, "cache.tar.gz");
  const r = await packCache(ws, ["deps"], out, { maxBytes: 1 << 30, maxEntries: 1000 });
  if (!r.ok) throw new Error(r.reason);
  return out;
}

describe("archiveContainsSecret", () => {
  const secret = "npm_Zq9sEcReT-value-0042";

  it("finds a value inside a file of the archive, also deep inside a large random one", async () => {
    expect(
      await archiveContainsSecret(await packed({ ".npmrc": `//registry/:_authToken=${secret}\n` }), [secret]),
    ).toBe(true);
    // 3 MiB of noise with the value at an offset that straddles gzip's and the reader's block edges.
    const noise = randomBytes(3 * 1024 * 1024);
    const at = 2 * 1024 * 1024 - 7;
    Buffer.from(secret).copy(noise, at);
    expect(await archiveContainsSecret(await packed({ "blob.bin": noise }), ["other-value", secret])).toBe(true);
  });

  it("passes an archive without the values, and any archive when the job has none", async () => {
    const file = await packed({ "a.txt": "nothing to see", "b.bin": randomBytes(100_000) });
    expect(await archiveContainsSecret(file, [secret])).toBe(false);
    expect(await archiveContainsSecret(file, [])).toBe(false);
  });
});
