// Side-by-side download variants against one s3rver object (how download+verify was tuned;
// docs/benchmarks.md "Artifacts"). Usage: tsx bench/artifacts/get-variants.ts [--mib 1024] [--rounds 3]
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { createReadStream, createWriteStream } from "node:fs";
import { mkdtemp, open, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { pipeline } from "node:stream/promises";
import { GetObjectCommand, PutObjectCommand } from "@aws-sdk/client-s3";
import { getSignedUrl } from "@aws-sdk/s3-request-presigner";
import { createObjectStore } from "@kiln/engine";
import { startS3Process } from "@kiln/testkit";
import http from "node:http";
import { createHash } from "node:crypto";
import { downloadToFile } from "@kiln/host-agent/artifacts";
import { median } from "../lib/stats.ts";

// The agent's former ranged download (4 x 16 MiB in flight, hashed and written in order), as it
// was after its last tuning (one positioned write per range instead of one per socket chunk),
// kept here as the comparison row.
const RANGE_BYTES = 16 * 1024 * 1024;
const RANGES_IN_FLIGHT = 4;

async function getRange(url: string, start: number, end: number, signal?: AbortSignal): Promise<Buffer[]> {
  const response = await new Promise<http.IncomingMessage>((resolve, reject) => {
    const req = http.request(
      url,
      { method: "GET", headers: { range: `bytes=${start}-${end}` }, ...(signal ? { signal } : {}) },
      resolve,
    );
    req.on("error", reject);
    req.end();
  });
  if (response.statusCode !== 206) throw new Error(`GET range answered ${response.statusCode}`);
  const chunks: Buffer[] = [];
  for await (const c of response) chunks.push(c as Buffer);
  return chunks;
}

/**
 * Downloads `expectedSize` bytes with 4 ranged GETs of 16 MiB in flight, writing and hashing them
 * strictly in order (at most 64 MiB buffered). Falls back to one GET for small objects. The caller
 * still compares size and digest: a short or altered object fails that check, not this function.
 */
async function downloadRangesToFile(
  url: string,
  dest: string,
  expectedSize: number,
  signal?: AbortSignal,
): Promise<{ sizeBytes: number; sha256: string }> {
  if (expectedSize <= RANGE_BYTES) return downloadToFile(url, dest, signal);
  const hash = createHash("sha256");
  const fh = await open(dest, "wx", 0o600);
  try {
    const starts = Array.from({ length: Math.ceil(expectedSize / RANGE_BYTES) }, (_, i) => i * RANGE_BYTES);
    const inflight: Promise<Buffer[]>[] = [];
    let next = 0;
    let written = 0;
    // One positioned writev per range, overlapping the hashing of the next one. A write per
    // 64 KiB socket chunk (16,384 thread-pool round trips per GiB) made download+verify 0.6-0.75
    // of a plain GetObject into a file (docs/benchmarks.md "Artifacts").
    let writing: Promise<unknown> = Promise.resolve();
    for (let i = 0; i < starts.length; i++) {
      while (inflight.length < RANGES_IN_FLIGHT && next < starts.length) {
        const s = starts[next++] ?? 0;
        const p = getRange(url, s, Math.min(expectedSize, s + RANGE_BYTES) - 1, signal);
        p.catch(() => undefined); // awaited in order below
        inflight.push(p);
      }
      const chunks = await (inflight.shift() as Promise<Buffer[]>);
      let n = 0;
      for (const chunk of chunks) {
        hash.update(chunk);
        n += chunk.length;
      }
      await writing;
      writing = writeAllAt(fh, chunks, written);
      writing.catch(() => undefined); // awaited before the next write and at the end
      written += n;
    }
    await writing;
    // Anything past the expected end means the object is not what the binding says.
    const tail = await getRange(url, expectedSize, expectedSize, signal).catch(() => []);
    for (const chunk of tail) {
      hash.update(chunk);
      written += chunk.length;
    }
    return { sizeBytes: written, sha256: hash.digest("hex") };
  } finally {
    await fh.close();
  }
}

/** Writes every chunk at `position` onward, however the kernel splits the writev. */
async function writeAllAt(fh: Awaited<ReturnType<typeof open>>, chunks: Buffer[], position: number): Promise<void> {
  let rest = Buffer.concat(chunks);
  let at = position;
  while (rest.length > 0) {
    const { bytesWritten } = await fh.write(rest, 0, rest.length, at);
    rest = rest.subarray(bytesWritten);
    at += bytesWritten;
  }
}

const arg = (name: string, fallback: string) =>
  process.argv.includes(`--${name}`) ? (process.argv[process.argv.indexOf(`--${name}`) + 1] ?? fallback) : fallback;
const MIB = Number(arg("mib", "1024"));
const ROUNDS = Number(arg("rounds", "3"));
const SIZE = MIB * 1024 * 1024;

const root = await mkdtemp(path.join(os.tmpdir(), "kiln-get-"));
const s3h = await startS3Process({ dataDir: path.join(root, "s3") });
const endpoint = s3h.endpoint;
const s3 = createObjectStore({
  endpoint,
  region: s3h.region,
  accessKeyId: s3h.accessKeyId,
  secretAccessKey: s3h.secretAccessKey,
});
try {
  const src = path.join(root, "src.bin");
  const fh = await open(src, "w");
  for (let off = 0; off < SIZE; off += 8 << 20) await fh.write(randomBytes(Math.min(8 << 20, SIZE - off)));
  await fh.close();
  await s3.send(new PutObjectCommand({ Bucket: "kiln", Key: "obj", Body: createReadStream(src), ContentLength: SIZE }));
  const url = await getSignedUrl(s3, new GetObjectCommand({ Bucket: "kiln", Key: "obj" }), { expiresIn: 3600 });
  const want = createHash("sha256")
    .update(await readFile(src))
    .digest("hex");
  const variants: Record<string, (dest: string) => Promise<unknown>> = {
    sdk: async (dest) =>
      pipeline(
        (await s3.send(new GetObjectCommand({ Bucket: "kiln", Key: "obj" }))).Body as NodeJS.ReadableStream,
        createWriteStream(dest),
      ),
    single_hash: (dest) => downloadToFile(url, dest),
    ranges_hash: (dest) => downloadRangesToFile(url, dest, SIZE),
  };
  const times: Record<string, number[]> = {};
  for (let r = 0; r < ROUNDS; r++) {
    for (const [name, f] of Object.entries(variants)) {
      const dest = path.join(root, `out-${name}`);
      spawnSync("sync");
      const t0 = performance.now();
      const got = (await f(dest)) as { sha256?: string } | undefined;
      (times[name] ??= []).push(performance.now() - t0);
      // Every hashing variant must have hashed the right bytes.
      if (got?.sha256 !== undefined && got.sha256 !== want)
        throw new Error(`${name}: sha256 ${got.sha256}, expected ${want}`);
      await rm(dest);
    }
  }
  const base = median(times.sdk ?? []);
  for (const [name, t] of Object.entries(times))
    console.log(
      `${name.padEnd(12)} median ${(median(t) / 1000).toFixed(2)} s  ratio ${(base / median(t)).toFixed(2)}  [${t.map((x) => (x / 1000).toFixed(2)).join(", ")}]`,
    );
} finally {
  s3.destroy();
  await s3h.stop();
  await rm(root, { recursive: true, force: true });
}
