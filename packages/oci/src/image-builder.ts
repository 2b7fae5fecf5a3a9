// Builds an OCI image (gzip layers, config, manifest, linux/amd64 index) from uncompressed layer
// tars and pushes it with the distribution API. Deterministic: the same tars give the same digests.
import { gzipSync } from "node:zlib";
import { sha256Digest } from "./digest.ts";
import { OCI_CONFIG, OCI_INDEX, OCI_LAYER_GZIP, OCI_MANIFEST } from "./media-types.ts";
import { HOST_PLATFORM } from "./manifests.ts";
import type { RegistryClient } from "./registry-client.ts";

export interface BuiltImage {
  /** digest -> bytes for the config and every layer. */
  blobs: Map<string, Buffer>;
  layerDigests: string[];
  diffIds: string[];
  configDigest: string;
  manifest: Buffer;
  manifestDigest: string;
  index: Buffer;
  indexDigest: string;
}

export function buildImage(opts: {
  layers: Buffer[];
  env?: string[];
  cmd?: string[];
  workingDir?: string;
}): BuiltImage {
  const blobs = new Map<string, Buffer>();
  const layers = opts.layers.map((tar) => {
    const gz = gzipSync(tar, { level: 6 });
    const digest = sha256Digest(gz);
    blobs.set(digest, gz);
    return { digest, size: gz.length, diffId: sha256Digest(tar) };
  });
  const config = Buffer.from(
    JSON.stringify({
      architecture: HOST_PLATFORM.architecture,
      os: HOST_PLATFORM.os,
      config: {
        Env: opts.env ?? ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],
        Cmd: opts.cmd ?? ["/bin/sh"],
        WorkingDir: opts.workingDir ?? "/",
      },
      rootfs: { type: "layers", diff_ids: layers.map((l) => l.diffId) },
      history: layers.map(() => ({ created_by: "kiln image-builder" })),
    }),
  );
  blobs.set(sha256Digest(config), config);
  return { blobs, ...assembleImage(config, layers) };
}

export interface LayerDescriptor {
  /** sha256 of the gzip blob. */
  digest: string;
  size: number;
  /** sha256 of the uncompressed tar (the config's rootfs.diff_ids). */
  diffId: string;
}

/** The manifest and the linux/amd64 index for a config and its layers (the config's bytes are given). */
export function assembleImage(config: Buffer, layers: LayerDescriptor[]): Omit<BuiltImage, "blobs"> {
  const configDigest = sha256Digest(config);
  const manifest = Buffer.from(
    JSON.stringify({
      schemaVersion: 2,
      mediaType: OCI_MANIFEST,
      config: { mediaType: OCI_CONFIG, digest: configDigest, size: config.length },
      layers: layers.map((l) => ({ mediaType: OCI_LAYER_GZIP, digest: l.digest, size: l.size })),
    }),
  );
  const manifestDigest = sha256Digest(manifest);
  const index = Buffer.from(
    JSON.stringify({
      schemaVersion: 2,
      mediaType: OCI_INDEX,
      manifests: [
        { mediaType: OCI_MANIFEST, digest: manifestDigest, size: manifest.length, platform: { ...HOST_PLATFORM } },
      ],
    }),
  );
  return {
    layerDigests: layers.map((l) => l.digest),
    diffIds: layers.map((l) => l.diffId),
    configDigest,
    manifest,
    manifestDigest,
    index,
    indexDigest: sha256Digest(index),
  };
}

/** Blobs first, then the manifest by digest, then the index under `tag` (the registry checks references). */
export async function pushImage(
  client: RegistryClient,
  repository: string,
  tag: string,
  image: BuiltImage,
): Promise<{ uploadedBytes: number }> {
  let uploadedBytes = 0;
  for (const bytes of image.blobs.values()) {
    const r = await client.pushBlob(repository, bytes);
    if (r.uploaded) uploadedBytes += bytes.length;
  }
  await client.putManifest(repository, image.manifestDigest, OCI_MANIFEST, image.manifest);
  await client.putManifest(repository, tag, OCI_INDEX, image.index);
  return { uploadedBytes };
}
