// Image pull+unpack benchmark (issue 3). One registry, the same bytes, the same run:
//   raw      = every layer blob of the image GET'd by curl to /dev/null, and by Node's fetch with the
//              bytes discarded (the floors: HTTP + the registry's disk read, nothing else);
//   cold     = the agent's prepareImage with an empty cache: manifest, config and layers by digest,
//              each hashed as it arrives, written to the cache, then re-hashed (compressed and
//              uncompressed) while being unpacked safely into a fresh rootfs;
//   unpack   = the same with the layers already cached (rootfs evicted): unpack + re-verify only;
//   warm     = a cache hit (the rootfs exists).
// Images: Kiln's base image (busybox-static, 270 symlinks) and a synthetic one of --mib MiB in
// two layers (files of 4 KiB-4 MiB, half random half zeros, so gzip has something to do).
// Usage: tsx bench/images/run.ts [--mib 64] [--rounds 3]
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtemp, rm, stat } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import {
  buildImage,
  pushImage,
  RegistryClient,
  registryEndpoint,
  writeTar,
  type BuiltImage,
  type TarEntry,
} from "@kiln/oci";
import { BUSYBOX, publishBaseImage, startRegistry } from "@kiln/testkit";
import { ImagePreparer } from "@kiln/host-agent/images";
import { createLogger } from "@kiln/logger";
import { median } from "../lib/stats.ts";

const execFileAsync = promisify(execFile);
const arg = (name: string, fallback: string) =>
  process.argv.includes(`--${name}`) ? (process.argv[process.argv.indexOf(`--${name}`) + 1] ?? fallback) : fallback;
const MIB = Number(arg("mib", "64"));
const ROUNDS = Number(arg("rounds", "3"));
const progress = (m: string) => process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${m}\n`);
const quiet = createLogger({ service: "bench" }, () => {});

function syntheticLayer(bytes: number, seed: number): Buffer {
  const entries: TarEntry[] = [{ path: `data${seed}`, type: "dir" }];
  let left = bytes;
  for (let i = 0; left > 0; i++) {
    const size = Math.min(left, 4096 * 2 ** (i % 11)); // 4 KiB .. 4 MiB
    const half = Math.floor(size / 2);
    entries.push({
      path: `data${seed}/d${i % 16}/f${i}`,
      type: "file",
      data: Buffer.concat([randomBytes(half), Buffer.alloc(size - half)]),
    });
    left -= size;
  }
  return writeTar(entries);
}

async function curlBlobs(url: string, repo: string, layers: string[]): Promise<number> {
  const t0 = performance.now();
  for (const d of layers) await execFileAsync("curl", ["-sf", "-o", "/dev/null", `${url}/v2/${repo}/blobs/${d}`]);
  return performance.now() - t0;
}

/** The same blobs through Node's fetch, bytes discarded: the in-process floor (no curl spawn). */
async function fetchBlobs(url: string, repo: string, layers: string[]): Promise<number> {
  const t0 = performance.now();
  for (const d of layers) {
    const res = await fetch(`${url}/v2/${repo}/blobs/${d}`);
    if (!res.ok || !res.body) throw new Error(`GET blob ${d}: ${res.status}`);
    for await (const _ of res.body) {
      /* discard, like curl -o /dev/null */
    }
  }
  return performance.now() - t0;
}

const mbps = (bytes: number, ms: number) => (bytes / 1e6 / (ms / 1000)).toFixed(1);

async function measure(
  name: string,
  url: string,
  ref: string,
  repo: string,
  digest: string,
  image: { layerDigests: string[]; compressed: number; unpacked: number },
  registries: Record<string, object>,
  work: string,
) {
  const raw: number[] = [];
  const rawFetch: number[] = [];
  const cold: number[] = [];
  const unpack: number[] = [];
  const warm: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    raw.push(await curlBlobs(url, repo, image.layerDigests));
    rawFetch.push(await fetchBlobs(url, repo, image.layerDigests));
    const p = new ImagePreparer({
      cacheDir: path.join(work, `${name}-${r}`),
      cacheBytes: 2 ** 40,
      registries,
      budget: { maxBytes: 2 ** 40, maxEntries: 10_000_000 },
      log: quiet,
    });
    const c = await p.prepareImage({ ref, digest });
    cold.push(c.ms);
    c.release();
    await p.cache.evict("rootfs", digest);
    const u = await p.prepareImage({ ref, digest });
    // Manifest and config (a few KiB) are fetched again; the layers must come from the cache.
    if (u.cacheHit || u.pulledBytes > 64 * 1024) throw new Error(`unpack round pulled ${u.pulledBytes} bytes`);
    unpack.push(u.ms);
    u.release();
    const w = await p.prepareImage({ ref, digest });
    if (!w.cacheHit) throw new Error("warm round missed the cache");
    warm.push(w.ms);
    w.release();
    await rm(path.join(work, `${name}-${r}`), { recursive: true, force: true });
  }
  const row = {
    image: name,
    compressed_bytes: image.compressed,
    unpacked_bytes: image.unpacked,
    rounds: ROUNDS,
    raw_curl_ms: median(raw),
    raw_fetch_ms: median(rawFetch),
    cold_pull_unpack_ms: median(cold),
    unpack_from_cache_ms: median(unpack),
    warm_hit_ms: median(warm),
    raw_curl_MBps: mbps(image.compressed, median(raw)),
    raw_fetch_MBps: mbps(image.compressed, median(rawFetch)),
    cold_MBps_compressed: mbps(image.compressed, median(cold)),
    cold_MBps_unpacked: mbps(image.unpacked, median(cold)),
    cold_vs_raw_fetch: (median(cold) / median(rawFetch)).toFixed(2),
  };
  progress(JSON.stringify(row));
  return row;
}

const work = await mkdtemp(path.join(os.tmpdir(), "kiln-bench-images-"));
const registry = await startRegistry({ dataDir: path.join(work, "registry") });
try {
  const base = await publishBaseImage({ registry: registry.host });
  const client = new RegistryClient(registryEndpoint({ [registry.host]: {} }, registry.host));
  const manifest = JSON.parse((await client.getManifest("kiln/base", base.manifestDigest)).bytes.toString("utf8")) as {
    layers: { digest: string; size: number }[];
  };
  const baseInfo = {
    layerDigests: manifest.layers.map((l) => l.digest),
    compressed: manifest.layers.reduce((n, l) => n + l.size, 0),
    unpacked: 0,
  };
  progress(`synthetic image: ${MIB} MiB in 2 layers`);
  const half = (MIB * 1024 * 1024) / 2;
  const big: BuiltImage = buildImage({ layers: [syntheticLayer(half, 1), syntheticLayer(half, 2)] });
  await pushImage(client, "kiln/bench", "1", big);
  const bigInfo = {
    layerDigests: big.layerDigests,
    compressed: big.layerDigests.reduce((n, d) => n + big.blobs.get(d)!.length, 0),
    unpacked: MIB * 1024 * 1024,
  };
  baseInfo.unpacked = (await stat(BUSYBOX)).size; // the rest is symlinks and three small files
  const rows = [
    await measure(
      "kiln/base:1",
      registry.url,
      base.ref,
      "kiln/base",
      base.manifestDigest,
      baseInfo,
      { [registry.host]: {} },
      work,
    ),
    await measure(
      `synthetic ${MIB} MiB`,
      registry.url,
      `${registry.host}/kiln/bench:1`,
      "kiln/bench",
      big.manifestDigest,
      bigInfo,
      { [registry.host]: {} },
      work,
    ),
  ];
  console.log(
    JSON.stringify(
      { node: process.version, cpus: os.cpus().length, layer_store: "registry filesystem driver on local disk", rows },
      null,
      2,
    ),
  );
} finally {
  await registry.stop();
  await rm(work, { recursive: true, force: true });
}
