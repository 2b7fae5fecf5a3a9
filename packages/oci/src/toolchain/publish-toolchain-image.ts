// Pushes a cached toolchain image to a registry (docs/adr/0040): layer and config blobs from the
// cache (skipped when the registry has them), the manifest by digest, then the index under the tag.
import { readFile } from "node:fs/promises";
import { OCI_INDEX, OCI_MANIFEST } from "../media-types.ts";
import type { RegistryClient } from "../registry-client.ts";
import type { ToolchainImage } from "./build-toolchain-image.ts";
import { ImageCache } from "./image-cache.ts";

export async function publishToolchainImage(
  client: RegistryClient,
  image: ToolchainImage,
  opts: { cacheDir: string; repository?: string; tag?: string },
): Promise<{ uploadedBytes: number }> {
  const cache = new ImageCache(opts.cacheDir);
  const repository = opts.repository ?? image.name;
  let uploadedBytes = 0;
  for (const digest of [...image.layers.map((l) => l.digest), image.configDigest]) {
    if (await client.hasBlob(repository, digest)) continue;
    const bytes = await readFile(cache.blobPath(digest));
    const r = await client.pushBlob(repository, bytes);
    if (r.uploaded) uploadedBytes += bytes.length;
  }
  const manifest = await readFile(cache.blobPath(image.manifestDigest));
  await client.putManifest(repository, image.manifestDigest, OCI_MANIFEST, manifest);
  await client.putManifest(
    repository,
    opts.tag ?? image.tag,
    OCI_INDEX,
    await readFile(cache.blobPath(image.indexDigest)),
  );
  return { uploadedBytes };
}
