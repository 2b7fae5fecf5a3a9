// Building and publishing toolchain images from scripts (docs/adr/0040): the cache directory
// (outside the repository), one spec built and pushed by digest, and the four built-in ones that
// `npm run up` provides. Shared by scripts/up.ts and `kiln image build`.
import os from "node:os";
import path from "node:path";
import {
  buildToolchainImage,
  BUILTIN_SPECS,
  imageSize,
  parseImageRef,
  publishToolchainImage,
  RegistryClient,
  registryEndpoint,
  type RegistryConfig,
  type ToolchainImage,
} from "@kiln/oci";

/** KILN_IMAGE_CACHE, else $XDG_CACHE_HOME/kiln/images, else ~/.cache/kiln/images: never inside the checkout. */
export function imageCacheDir(): string {
  if (process.env.KILN_IMAGE_CACHE) return path.resolve(process.env.KILN_IMAGE_CACHE);
  const xdg = process.env.XDG_CACHE_HOME || path.join(os.homedir(), ".cache");
  return path.join(xdg, "kiln", "images");
}

export interface PublishedToolchainImage {
  image: ToolchainImage;
  /** registry/name:tag */
  ref: string;
  /** registry/name@sha256:... (what a frozen run carries). */
  pinned: string;
  sizeBytes: number;
  uploadedBytes: number;
  seconds: number;
}

/** Builds (or reuses) one image and, when `registry` is given, pushes it there by digest and tag. */
export async function buildAndPublish(
  spec: unknown,
  opts: { registry: string | null; config?: RegistryConfig; log: (m: string) => void; cacheDir?: string },
): Promise<PublishedToolchainImage> {
  const t0 = performance.now();
  const cacheDir = opts.cacheDir ?? imageCacheDir();
  const image = await buildToolchainImage(spec, { cacheDir, onProgress: opts.log });
  let uploadedBytes = 0;
  let ref = `${image.name}:${image.tag}`;
  let pinned = `${image.name}@${image.manifestDigest}`;
  if (opts.registry) {
    const parsed = parseImageRef(`${opts.registry}/${image.name}:${image.tag}`);
    // The caller named this registry on purpose: allowed even when KILN_REGISTRIES omits it.
    const config = opts.config ?? {};
    const allowed = Object.hasOwn(config, parsed.registry) ? config : { ...config, [parsed.registry]: {} };
    const client = new RegistryClient(registryEndpoint(allowed, parsed.registry));
    ({ uploadedBytes } = await publishToolchainImage(client, image, { cacheDir }));
    ref = `${opts.registry}/${image.name}:${image.tag}`;
    pinned = `${opts.registry}/${image.name}@${image.manifestDigest}`;
  }
  const seconds = (performance.now() - t0) / 1000;
  return { image, ref, pinned, sizeBytes: imageSize(image), uploadedBytes, seconds };
}

/**
 * The built-in images, the pool default (kiln/node:24) first. A failed build is logged and left
 * out (jobs naming it then fail as image.not_found), never hidden behind another image.
 */
export async function publishBuiltinImages(
  registry: string,
  log: (m: string) => void,
  only?: string[],
): Promise<PublishedToolchainImage[]> {
  const specs = [...BUILTIN_SPECS].sort((a, b) => Number(b.name === "kiln/node") - Number(a.name === "kiln/node"));
  const out: PublishedToolchainImage[] = [];
  for (const spec of specs) {
    const name = `${spec.name}:${spec.tag}`;
    if (only && !only.includes(name)) continue;
    try {
      const p = await buildAndPublish(spec, { registry, log });
      log(
        `${name} = ${p.pinned} (${(p.sizeBytes / 2 ** 20).toFixed(0)} MiB compressed, ${p.image.cached ? "cached" : "built"}, ${p.seconds.toFixed(1)} s)`,
      );
      out.push(p);
    } catch (e) {
      log(`${name} NOT available: ${e instanceof Error ? e.message : String(e)}`);
    }
  }
  return out;
}
