// Toolchain images (issue 30, docs/adr/0040): what `npm run up` spends on them. For each named
// built-in image (default kiln/node:24), in one run: build or reuse from the image cache
// (KILN_IMAGE_CACHE; point it at an empty directory for a cold build), push to a fresh registry,
// then the same again (a cache hit, and a registry that already has every blob). Prints seconds,
// compressed sizes and bytes uploaded.
// Usage: KILN_IMAGE_CACHE=/tmp/empty-cache tsx bench/toolchain-images/run.ts [kiln/node:24 ...]
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import {
  buildToolchainImage,
  BUILTIN_SPECS,
  imageSize,
  publishToolchainImage,
  RegistryClient,
  registryEndpoint,
} from "@kiln/oci";
import { startRegistry } from "@kiln/testkit";

/** The cache `npm run up` uses (scripts/lib/images/toolchain-images.ts: imageCacheDir). */
const cacheDir = process.env.KILN_IMAGE_CACHE
  ? path.resolve(process.env.KILN_IMAGE_CACHE)
  : path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), ".cache"), "kiln", "images");

/** What `npm run up` does per image: build or reuse, then push by digest and tag. */
async function publishBuiltinImages(host: string, names: string[]) {
  const client = new RegistryClient(registryEndpoint({ [host]: {} }, host));
  const out = [];
  for (const spec of BUILTIN_SPECS.filter((s) => names.includes(`${s.name}:${s.tag}`))) {
    const t0 = performance.now();
    const image = await buildToolchainImage(spec, { cacheDir });
    const { uploadedBytes } = await publishToolchainImage(client, image, { cacheDir });
    const seconds = (performance.now() - t0) / 1000;
    out.push({
      image,
      seconds,
      uploadedBytes,
      sizeBytes: imageSize(image),
      pinned: `${host}/${image.name}@${image.manifestDigest}`,
    });
  }
  return out;
}

const only = process.argv.slice(2);
const names = only.length ? only : ["kiln/node:24"];
const dir = await mkdtemp(path.join(os.tmpdir(), "kiln-bench-toolchain-"));
const registry = await startRegistry({ dataDir: path.join(dir, "registry") });
console.log(`cache ${cacheDir}; registry ${registry.host}`);
try {
  for (const round of ["first (build or reuse, push everything)", "second (cached, registry has the blobs)"]) {
    const t0 = performance.now();
    const out = await publishBuiltinImages(registry.host, names);
    const secs = ((performance.now() - t0) / 1000).toFixed(1);
    console.log(`${round}: ${secs} s`);
    for (const o of out)
      console.log(
        `  ${o.image.name}:${o.image.tag} ${o.image.cached ? "cached" : "built"} in ${o.seconds.toFixed(1)} s, ` +
          `${(o.sizeBytes / 2 ** 20).toFixed(1)} MiB compressed in ${o.image.layers.length} layer(s), ` +
          `${(o.uploadedBytes / 2 ** 20).toFixed(1)} MiB uploaded, ${o.image.packages.length} Debian packages, ${o.pinned}`,
      );
  }
} finally {
  await registry.stop();
  await rm(dir, { recursive: true, force: true });
}
