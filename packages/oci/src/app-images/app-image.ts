// A deployable image (docs/adr/0046): a toolchain image from the cache as the base (its layers and
// its config's environment are reused byte for byte) plus layers made by packTree, with the
// process's command, user and working directory. Written to the same content-addressed cache, and
// from there into an OCI image layout any OCI tool reads (skopeo copy oci:<dir>:<tag> ...).
import { copyFile, mkdir, readFile, writeFile } from "node:fs/promises";
import { existsSync } from "node:fs";
import path from "node:path";
import { HOST_PLATFORM } from "../manifests.ts";
import { assembleImage, type LayerDescriptor } from "../image-builder.ts";
import { OCI_INDEX, OCI_MANIFEST } from "../media-types.ts";
import type { ImageCache } from "../toolchain/index.ts";

export interface AppImageSpec {
  /** The repository name and tag, e.g. kiln/web and a commit id: the layout names the manifest `<name>:<tag>`. */
  name: string;
  tag: string;
  base: { configDigest: string; layers: readonly LayerDescriptor[] };
  /** Added on top of the base, in order. */
  layers: readonly { layer: LayerDescriptor; createdBy: string }[];
  cmd: readonly string[];
  workingDir: string;
  /** `uid:gid`; "0:0" only where the process needs root (the host agent). */
  user: string;
  env?: Readonly<Record<string, string>>;
  labels?: Readonly<Record<string, string>>;
  /** The image's created time (seconds), e.g. the commit's: never the build's clock. */
  epoch: number;
}

export interface AppImage {
  name: string;
  tag: string;
  manifestDigest: string;
  manifestSize: number;
  configDigest: string;
  layers: LayerDescriptor[];
}

interface BaseConfig {
  config?: { Env?: string[] };
  history?: unknown[];
}

export async function buildAppImage(cache: ImageCache, spec: AppImageSpec): Promise<AppImage> {
  const base = JSON.parse(await readFile(cache.blobPath(spec.base.configDigest), "utf8")) as BaseConfig;
  const created = new Date(spec.epoch * 1000).toISOString();
  // The base's variables (PATH, LANG, the toolchain's own) first; ours override by name.
  const env = new Map((base.config?.Env ?? []).map((e) => [e.slice(0, e.indexOf("=")), e] as const));
  for (const [k, v] of Object.entries(spec.env ?? {})) env.set(k, `${k}=${v}`);
  const layers = [...spec.base.layers, ...spec.layers.map((l) => l.layer)];
  const config = Buffer.from(
    JSON.stringify({
      created,
      architecture: HOST_PLATFORM.architecture,
      os: HOST_PLATFORM.os,
      config: {
        User: spec.user,
        Env: [...env.values()],
        Cmd: spec.cmd,
        WorkingDir: spec.workingDir,
        Labels: { ...spec.labels, "org.opencontainers.image.title": `${spec.name}:${spec.tag}` },
      },
      rootfs: { type: "layers", diff_ids: layers.map((l) => l.diffId) },
      history: [...(base.history ?? []), ...spec.layers.map((l) => ({ created, created_by: l.createdBy }))],
    }),
  );
  await cache.putBlob(config);
  const assembled = assembleImage(config, layers);
  await cache.putBlob(assembled.manifest);
  return {
    name: spec.name,
    tag: spec.tag,
    manifestDigest: assembled.manifestDigest,
    manifestSize: assembled.manifest.length,
    configDigest: assembled.configDigest,
    layers,
  };
}

/**
 * Writes `images` as one OCI image layout (image-layout v1.0.0) into `dir`: their blobs, and an
 * index.json naming each manifest `<name>:<tag>` in `org.opencontainers.image.ref.name`.
 */
export async function writeOciLayout(cache: ImageCache, dir: string, images: readonly AppImage[]): Promise<void> {
  const blobs = path.join(dir, "blobs", "sha256");
  await mkdir(blobs, { recursive: true });
  for (const digest of new Set(
    images.flatMap((i) => [i.manifestDigest, i.configDigest, ...i.layers.map((l) => l.digest)]),
  )) {
    const to = path.join(blobs, digest.replace(/^sha256:/, ""));
    if (!existsSync(to)) await copyFile(cache.blobPath(digest), to);
  }
  await writeFile(path.join(dir, "oci-layout"), `${JSON.stringify({ imageLayoutVersion: "1.0.0" })}\n`);
  const index = {
    schemaVersion: 2,
    mediaType: OCI_INDEX,
    manifests: images.map((i) => ({
      mediaType: OCI_MANIFEST,
      digest: i.manifestDigest,
      size: i.manifestSize,
      platform: { ...HOST_PLATFORM },
      annotations: { "org.opencontainers.image.ref.name": `${i.name}:${i.tag}` },
    })),
  };
  await writeFile(path.join(dir, "index.json"), `${JSON.stringify(index, null, 2)}\n`);
}
