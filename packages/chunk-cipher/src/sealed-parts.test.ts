// Parts sealed one at a time (the host agent's upload, docs/adr/0037 "Artifacts") must be, end to
// end, the very object a whole-stream seal makes: then every reader (OpenStream, openRange, python)
// opens them, and the store's multipart ETag is the MD5 of what the agent PUT.
import { randomBytes } from "node:crypto";
import type { Transform } from "node:stream";
import { finished } from "node:stream/promises";
import { planArtifactParts, sealedParts, sealedSize, SHRED_SALT_BYTES } from "@kiln/domain";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { headerFor, openBuffer, PartSealStream, sealBuffer, type DataKey } from "./chunk-cipher.ts";

const KEY: DataKey = { id: "8c1d4f9e-1c2b-4a5d-9e8f-0123456789ab", key: randomBytes(32) };

async function sealPart(header: Buffer, plain: Buffer, p: ReturnType<typeof sealedParts>[number]): Promise<Buffer> {
  const out: Buffer[] = [];
  // Odd-sized input buffers: the cutter must not depend on how the file stream slices the range.
  const slices = [];
  for (let i = 0; i < p.plainSize; i += 777)
    slices.push(plain.subarray(p.plainOffset + i, p.plainOffset + Math.min(p.plainSize, i + 777)));
  await run(new PartSealStream(KEY.key, header, p), slices, out);
  return Buffer.concat(out);
}

async function run(t: Transform, input: Buffer[], out: Buffer[]): Promise<void> {
  t.on("data", (c: Buffer) => out.push(c));
  for (const b of input) t.write(b);
  t.end();
  await finished(t);
}

describe("sealed multipart parts", () => {
  it("concatenate to exactly the whole-object seal, for any size and part count", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: 4 * 4096 + 17 }),
        fc.integer({ min: 1, max: 4 }),
        async (size, chunksPerPart) => {
          const chunk = 1024;
          const plain = randomBytes(size);
          const salt = randomBytes(SHRED_SALT_BYTES);
          const header = headerFor(KEY.id, chunk, salt);
          // A plan with tiny parts (the real minimum is 5 MiB; the layout does not care).
          const plan = {
            partSize: chunk * chunksPerPart,
            partCount: Math.max(1, Math.ceil(size / (chunk * chunksPerPart))),
          };
          const parts = sealedParts(size, plan, chunk);
          const sealed = Buffer.concat(await Promise.all(parts.map((p) => sealPart(header, plain, p))));
          expect(parts.reduce((n, p) => n + p.sealedSize, 0)).toBe(sealedSize(size, chunk));
          expect(sealed.equals(sealBuffer(KEY, plain, chunk, salt))).toBe(true);
          expect(openBuffer(KEY, sealed).equals(plain)).toBe(true);
        },
      ),
      { numRuns: 60 },
    );
  });

  it("refuses a plan that is not chunk-aligned and a part fed the wrong number of bytes", async () => {
    expect(() => sealedParts(10, { partSize: 1000, partCount: 1 }, 1024)).toThrow(/multiple of chunk size/);
    const plan = planArtifactParts(3 * 65536);
    const [p] = sealedParts(3 * 65536, plan, 65536);
    const header = headerFor(KEY.id, 65536, randomBytes(8));
    await expect(run(new PartSealStream(KEY.key, header, p!), [randomBytes(65536)], [])).rejects.toMatchObject({
      code: "SHRED.BAD_FORMAT",
    });
  });
});
