// Turns a pinned image (reference + manifest digest from the ticket) into a rootfs directory:
// manifest, config and layers are pulled by digest and verified, layers are cached under the
// agent's work dir within a byte budget, and unpacked safely (safe-unpack.ts). A rootfs is only
// renamed into place after every layer's compressed digest and uncompressed diff_id matched, so
// no sandbox ever sees unverified bytes. A cached layer that fails its check is evicted and
// fetched again once.
import { createHash, type Hash } from "node:crypto";
import { createReadStream } from "node:fs";
import { mkdir, rename, rm } from "node:fs/promises";
import { Readable } from "node:stream";
import { createGunzip } from "node:zlib";
import {
  assertDigest,
  GZIP_LAYER_TYPES,
  ImageError,
  manifestKind,
  parseConfig,
  parseImageRef,
  parseIndex,
  parseManifest,
  RegistryClient,
  registryConfigSchema,
  registryEndpoint,
  selectPlatform,
  type ImageConfig,
  type ImageManifest,
  type RegistryConfig,
} from "@kiln/oci";
import type { Logger } from "@kiln/logger";
import { fetchBlob } from "./blob-fetch.ts";
import { ImageCache } from "./image-cache.ts";
import { LayerApplier, type UnpackBudget, type UnpackStats } from "./safe-unpack.ts";
import { readTar } from "../shared/tar-reader.ts";

export interface ImagePreparerConfig {
  /** <KILN_WORK_DIR>/.images */
  cacheDir: string;
  /** KILN_IMAGE_CACHE_BYTES */
  cacheBytes: number;
  registries: RegistryConfig;
  budget: UnpackBudget;
  log: Logger;
}

export interface PreparedImage {
  rootfsDir: string;
  digest: string;
  /** Bytes received from the registry for this call (0 on a cache hit). */
  pulledBytes: number;
  cacheHit: boolean;
  ms: number;
  /** The rootfs stays out of eviction until this is called (after the sandbox is destroyed). */
  release(): void;
}

const MAX_CONFIG_BYTES = 1024 * 1024;

class LayerDigestError extends ImageError {
  constructor(
    readonly layerDigest: string,
    message: string,
  ) {
    super("IMAGE.DIGEST_MISMATCH", message);
  }
}

export class ImagePreparer {
  readonly cache: ImageCache;
  private readonly clients = new Map<string, RegistryClient>();
  private readonly inflight = new Map<string, Promise<number>>();
  /** The agent's own KILN_REGISTRIES over what the control plane told it (adoptRegistries). */
  private registries: RegistryConfig;

  constructor(private readonly cfg: ImagePreparerConfig) {
    this.cache = new ImageCache(cfg.cacheDir, cfg.cacheBytes);
    this.registries = cfg.registries;
  }

  /**
   * The registries (and mirrors) the control plane told this agent at session start (issue 30). The
   * agent's own KILN_REGISTRIES wins for a host it also lists (a local mirror, its own credentials).
   * Entries that do not parse are dropped and named, never half-used. Returns the hosts adopted.
   */
  adoptRegistries(told: Record<string, unknown>): { adopted: string[]; rejected: string[] } {
    const adopted: string[] = [];
    const rejected: string[] = [];
    const merged: RegistryConfig = {};
    for (const [host, entry] of Object.entries(told)) {
      const parsed = registryConfigSchema.safeParse({ [host]: entry });
      if (parsed.success) {
        Object.assign(merged, parsed.data);
        adopted.push(host);
      } else rejected.push(host);
    }
    this.registries = { ...merged, ...this.cfg.registries };
    this.clients.clear();
    return { adopted, rejected };
  }

  async prepareImage(opts: { ref: string; digest: string; signal?: AbortSignal }): Promise<PreparedImage> {
    const started = performance.now();
    const digest = assertDigest(opts.digest, "image digest");
    const ref = parseImageRef(opts.ref);
    await this.cache.open();
    let pulledBytes = 0;
    const cacheHit = this.cache.has("rootfs", digest);
    if (!cacheHit) {
      let pending = this.inflight.get(digest);
      if (!pending) {
        pending = this.pull(ref.registry, ref.repository, digest, opts.signal).finally(() =>
          this.inflight.delete(digest),
        );
        this.inflight.set(digest, pending);
      }
      pulledBytes = await pending;
    }
    const release = this.cache.hold("rootfs", digest);
    const evicted = await this.cache.enforceBudget();
    if (evicted.length > 0)
      this.cfg.log.info("image cache evicted entries", {
        count: evicted.length,
        bytes: evicted.reduce((n, e) => n + e.bytes, 0),
      });
    if (this.cache.totalBytes() > this.cfg.cacheBytes)
      this.cfg.log.warn("image cache over budget: the rest is in use", {
        bytes: this.cache.totalBytes(),
        budget: this.cfg.cacheBytes,
      });
    return {
      rootfsDir: this.cache.rootfsPath(digest),
      digest,
      pulledBytes,
      cacheHit,
      ms: performance.now() - started,
      release,
    };
  }

  private client(registry: string): RegistryClient {
    let c = this.clients.get(registry);
    if (!c) {
      c = new RegistryClient(registryEndpoint(this.registries, registry));
      this.clients.set(registry, c);
    }
    return c;
  }

  /** Pulls and unpacks; resolves to the bytes received from the registry. */
  private async pull(registry: string, repository: string, digest: string, signal?: AbortSignal): Promise<number> {
    const client = this.client(registry);
    let top = await client.getManifest(repository, digest, signal); // verified against `digest`
    let pulled = top.bytes.length;
    if (manifestKind(top.mediaType, top.bytes) === "index") {
      const entry = selectPlatform(parseIndex(top.bytes, `index ${digest}`), `${registry}/${repository}@${digest}`);
      top = await client.getManifest(repository, entry.digest, signal);
      pulled += top.bytes.length;
    }
    const manifest = parseManifest(top.bytes, `manifest ${top.digest}`);
    if (manifest.config.size > MAX_CONFIG_BYTES)
      throw new ImageError("IMAGE.TOO_LARGE", `image config is ${manifest.config.size} bytes`);
    const configBytes = await client.getSmallBlob(repository, manifest.config.digest, MAX_CONFIG_BYTES, signal); // verified
    pulled += configBytes.length;
    const config = parseConfig(configBytes, `config ${manifest.config.digest}`);
    if (config.rootfs.diff_ids.length !== manifest.layers.length)
      throw new ImageError("IMAGE.BAD_MANIFEST", "image config and manifest disagree on the number of layers");

    const releases: (() => void)[] = [];
    try {
      for (const layer of manifest.layers) {
        if (!this.cache.has("blob", layer.digest))
          pulled += (await fetchBlob(this.cache, client, repository, layer, this.cfg.log, signal)).pulledBytes;
        releases.push(this.cache.hold("blob", layer.digest));
      }
      for (let attempt = 1; ; attempt++) {
        try {
          const stats = await this.unpack(manifest, config, digest, signal);
          this.cfg.log.info("image unpacked", {
            digest,
            files: stats.files,
            bytes: stats.bytes,
            skipped: stats.skipped,
            stripped_setid: stats.strippedSetid,
          });
          return pulled;
        } catch (err) {
          if (!(err instanceof LayerDigestError) || attempt > 1 || signal?.aborted) throw err;
          // The cached copy went bad on disk: never use it, fetch it again, unpack from scratch.
          this.cfg.log.warn("cached image layer failed its digest check; evicted, fetching again", {
            digest: err.layerDigest,
            error: err.message,
          });
          await this.cache.evict("blob", err.layerDigest);
          const layer = manifest.layers.find((l) => l.digest === err.layerDigest)!;
          pulled += (await fetchBlob(this.cache, client, repository, layer, this.cfg.log, signal)).pulledBytes;
          releases.push(this.cache.hold("blob", layer.digest));
        }
      }
    } finally {
      for (const r of releases) r();
    }
  }

  private async unpack(
    manifest: ImageManifest,
    config: ImageConfig,
    digest: string,
    signal?: AbortSignal,
  ): Promise<UnpackStats> {
    const tmp = this.cache.tempPath("rootfs", digest);
    await mkdir(tmp, { mode: 0o755 });
    try {
      const applier = new LayerApplier(tmp, this.cfg.budget);
      for (const [i, layer] of manifest.layers.entries()) {
        const compressedHash = createHash("sha256");
        const diffHash = createHash("sha256");
        // Big reads and big inflate chunks: fewer hops through the event loop per MiB unpacked.
        const file = Readable.from(
          hashed(createReadStream(this.cache.blobPath(layer.digest), { highWaterMark: 1 << 20 }), compressedHash),
        );
        let tarBytes: AsyncIterable<Buffer> = file;
        if (GZIP_LAYER_TYPES.includes(layer.mediaType)) {
          const gunzip = createGunzip({ chunkSize: 1 << 18 });
          file.on("error", (e) => gunzip.destroy(e));
          tarBytes = file.pipe(gunzip);
        }
        const tapped = hashed(tarBytes, diffHash);
        try {
          await applier.apply(readTar(tapped), signal);
          for await (const _ of tapped) {
            /* trailing padding after the end-of-archive blocks */
          }
        } catch (err) {
          // A cached blob damaged on disk shows up as a broken gzip or tar; say so, so it is refetched.
          const actual = await hashFile(this.cache.blobPath(layer.digest));
          if (actual !== layer.digest)
            throw new LayerDigestError(
              layer.digest,
              `layer ${i + 1}: cached blob hashes to ${actual}, expected ${layer.digest}`,
            );
          throw err;
        }
        const c = `sha256:${compressedHash.digest("hex")}`;
        const d = `sha256:${diffHash.digest("hex")}`;
        if (c !== layer.digest)
          throw new LayerDigestError(
            layer.digest,
            `layer ${i + 1}: cached blob hashes to ${c}, expected ${layer.digest}`,
          );
        if (d !== config.rootfs.diff_ids[i])
          throw new LayerDigestError(
            layer.digest,
            `layer ${i + 1}: uncompressed content hashes to ${d}, config says ${config.rootfs.diff_ids[i]}`,
          );
      }
      await applier.finish();
      await rm(this.cache.rootfsPath(digest), { recursive: true, force: true });
      await rename(tmp, this.cache.rootfsPath(digest));
      await this.cache.add("rootfs", digest, applier.stats.bytes);
      return applier.stats;
    } catch (err) {
      await rm(tmp, { recursive: true, force: true });
      throw err;
    }
  }
}

async function* hashed(src: AsyncIterable<Buffer>, hash: Hash): AsyncGenerator<Buffer> {
  for await (const chunk of src) {
    hash.update(chunk);
    yield chunk;
  }
}

async function hashFile(file: string): Promise<string> {
  const hash = createHash("sha256");
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return `sha256:${hash.digest("hex")}`;
}
