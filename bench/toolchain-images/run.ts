// Toolchain images (issue 30, docs/adr/0040): what `npm run up` spends on them. For each named
// built-in image (default kiln/node:24), in one run: build or reuse from the image cache
// (KILN_IMAGE_CACHE; point it at an empty directory for a cold build), push to a fresh registry,
// then the same again (a cache hit, and a registry that already has every blob). Prints seconds,
// compressed sizes and bytes uploaded.
// Usage: KILN_IMAGE_CACHE=/tmp/empty-cache tsx bench/toolchain-images/run.ts [kiln/node:24 ...]
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { startRegistry } from "@kiln/testkit";
import { imageCacheDir, publishBuiltinImages } from "../../scripts/lib/images/toolchain-images.ts";

const only = process.argv.slice(2);
const names = only.length ? only : ["kiln/node:24"];
const dir = await mkdtemp(path.join(os.tmpdir(), "kiln-bench-toolchain-"));
const registry = await startRegistry({ dataDir: path.join(dir, "registry") });
console.log(`cache ${imageCacheDir()}; registry ${registry.host}`);
try {
  for (const round of ["first (build or reuse, push everything)", "second (cached, registry has the blobs)"]) {
    const t0 = performance.now();
    const out = await publishBuiltinImages(registry.host, () => undefined, names);
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
