// Against Debian's real docker-registry (basic auth): publish the base image, pull it by digest,
// unpack, hit the cache, evict by budget, and prove tampered bytes are never used.
import { execFile } from "node:child_process";
import { access, mkdtemp, readFile, readlink, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import {
  buildImage,
  digestHex,
  pushImage,
  RegistryClient,
  registryEndpoint,
  writeTar,
  type RegistryConfig,
} from "@kiln/oci";
import { freePort, publishBaseImage, startRegistry, type PublishedImage, type RegistryHandle } from "@kiln/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Logger } from "@kiln/logger";
import { imageFailureVerdict } from "./image-verdict.ts";
import { ImagePreparer } from "./prepare-image.ts";

const execFileAsync = promisify(execFile);
const CREDS = { username: "kiln", password: "s3cret-registry" };
let base: string;
let registry: RegistryHandle;
let config: RegistryConfig;
let published: PublishedImage;

function capturingLogger(): Logger & { lines: { level: string; msg: string; fields?: Record<string, unknown> }[] } {
  const lines: { level: string; msg: string; fields?: Record<string, unknown> }[] = [];
  const at = (level: string) => (msg: string, fields?: Record<string, unknown>) => {
    lines.push({ level, msg, ...(fields ? { fields } : {}) });
  };
  const logger = {
    lines,
    debug: at("debug"),
    info: at("info"),
    warn: at("warn"),
    error: at("error"),
    child: () => logger,
  } as unknown as Logger & { lines: typeof lines };
  return logger;
}

function preparer(name: string, cacheBytes = 1 << 30, log = capturingLogger()): ImagePreparer {
  return new ImagePreparer({
    cacheDir: path.join(base, name),
    cacheBytes,
    registries: config,
    budget: { maxBytes: 1 << 30, maxEntries: 100_000 },
    log,
  });
}

/** A one-layer image with unique content under `repo:tag`; returns its manifest digest and layer digest. */
async function publishSmall(
  repo: string,
  tag: string,
  payload: string,
): Promise<{ ref: string; digest: string; layer: string }> {
  const image = buildImage({
    layers: [
      writeTar([
        { path: "hello.txt", type: "file", data: payload },
        { path: "etc", type: "dir" },
      ]),
    ],
  });
  await pushImage(new RegistryClient(registryEndpoint(config, registry.host)), repo, tag, image);
  return { ref: `${registry.host}/${repo}:${tag}`, digest: image.manifestDigest, layer: image.layerDigests[0]! };
}

function registryBlobFile(digest: string): string {
  const hex = digestHex(digest);
  return path.join(registry.storageDir, "docker/registry/v2/blobs/sha256", hex.slice(0, 2), hex, "data");
}

beforeAll(async () => {
  base = await mkdtemp(path.join(os.tmpdir(), "kiln-images-"));
  registry = await startRegistry({ dataDir: path.join(base, "registry"), basicAuth: CREDS });
  config = { [registry.host]: CREDS };
  published = await publishBaseImage({ registry: registry.host, config });
});
afterAll(async () => {
  await registry?.stop();
  await rm(base, { recursive: true, force: true });
});

describe("prepareImage against a real registry", () => {
  it("pulls the base image by digest, unpacks a working busybox rootfs, then hits the cache", async () => {
    const p = preparer("cache-a");
    const first = await p.prepareImage({ ref: published.ref, digest: published.manifestDigest });
    expect(first).toMatchObject({ digest: published.manifestDigest, cacheHit: false });
    expect(first.pulledBytes).toBeGreaterThan(500_000); // busybox-static, gzipped
    expect(await readlink(path.join(first.rootfsDir, "bin/sh"))).toBe("busybox");
    expect(await readFile(path.join(first.rootfsDir, "etc/passwd"), "utf8")).toContain("root:x:0:0");
    const { stdout } = await execFileAsync(path.join(first.rootfsDir, "bin/busybox"), [
      "sh",
      "-c",
      "echo from-the-image",
    ]);
    expect(stdout.trim()).toBe("from-the-image");
    first.release();

    const second = await p.prepareImage({ ref: published.ref, digest: published.manifestDigest });
    expect(second).toMatchObject({ cacheHit: true, pulledBytes: 0, rootfsDir: first.rootfsDir });
    second.release();
    // A fresh agent on the same work dir finds the cache on disk.
    const restarted = await preparer("cache-a").prepareImage({ ref: published.ref, digest: published.manifestDigest });
    expect(restarted).toMatchObject({ cacheHit: true, pulledBytes: 0 });
    restarted.release();
  });

  it("accepts the index digest too (selects linux/amd64) and classifies a missing digest as the user's", async () => {
    const p = preparer("cache-index");
    const viaIndex = await p.prepareImage({ ref: published.ref, digest: published.indexDigest });
    await access(path.join(viaIndex.rootfsDir, "bin/busybox"));
    viaIndex.release();
    const missing = `sha256:${"0".repeat(64)}`;
    const err = await p.prepareImage({ ref: published.ref, digest: missing }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: "IMAGE.NOT_FOUND" });
    expect(imageFailureVerdict(published.ref, err)).toMatchObject({
      outcome: "user_failure",
      cause: "image.not_found",
    });
    const anon = new ImagePreparer({
      cacheDir: path.join(base, "anon"),
      cacheBytes: 1 << 30,
      registries: { [registry.host]: {} }, // listed, without the credentials it needs
      budget: { maxBytes: 1 << 30, maxEntries: 1000 },
      log: capturingLogger(),
    });
    const refused = await anon
      .prepareImage({ ref: published.ref, digest: published.manifestDigest })
      .catch((e: unknown) => e);
    expect(refused).toMatchObject({ code: "IMAGE.UNAUTHORIZED" });
    // A registry this host's KILN_REGISTRIES does not list is never contacted (docs/adr/0017).
    const unlisted = new ImagePreparer({
      cacheDir: path.join(base, "unlisted"),
      cacheBytes: 1 << 30,
      registries: {},
      budget: { maxBytes: 1 << 30, maxEntries: 1000 },
      log: capturingLogger(),
    });
    const notAllowed = await unlisted
      .prepareImage({ ref: published.ref, digest: published.manifestDigest })
      .catch((e: unknown) => e);
    expect(notAllowed).toMatchObject({ code: "IMAGE.REGISTRY_NOT_ALLOWED" });
    // The image was pinned by the control plane, so its registry is the installation's: an agent not
    // configured for it is the platform's failure, retried elsewhere, never blocked_by_policy (issue 30).
    expect(imageFailureVerdict(published.ref, notAllowed)).toMatchObject({
      outcome: "platform_failure",
      cause: "image.registry_unconfigured",
    });
    expect(imageFailureVerdict(published.ref, refused)).toMatchObject({
      outcome: "platform_failure",
      cause: "image.pull_failed",
    });
  });

  it("pulls with the registries the control plane told it, with none of its own (issue 30)", async () => {
    const p = new ImagePreparer({
      cacheDir: path.join(base, "told"),
      cacheBytes: 1 << 30,
      registries: {}, // an agent started by hand: no KILN_REGISTRIES
      budget: { maxBytes: 1 << 30, maxEntries: 1000 },
      log: capturingLogger(),
    });
    const before = await p.prepareImage({ ref: published.ref, digest: published.manifestDigest }).catch((e) => e);
    expect(before).toMatchObject({ code: "IMAGE.REGISTRY_NOT_ALLOWED" });
    // What registerSession answers: this registry with its credentials, and an entry that does not parse.
    expect(p.adoptRegistries({ [registry.host]: CREDS, "bad host!": { username: "only-half" } })).toEqual({
      adopted: [registry.host],
      rejected: ["bad host!"],
    });
    const pulled = await p.prepareImage({ ref: published.ref, digest: published.manifestDigest });
    expect(pulled).toMatchObject({ digest: published.manifestDigest, cacheHit: false });
    pulled.release();
  });

  it("a registry it cannot reach ends the attempt as the platform's failure, retried elsewhere", async () => {
    const port = await freePort(); // nothing listens there
    const host = `127.0.0.1:${port}`;
    const p = new ImagePreparer({
      cacheDir: path.join(base, "unreachable"),
      cacheBytes: 1 << 30,
      registries: { [host]: {} },
      budget: { maxBytes: 1 << 30, maxEntries: 1000 },
      log: capturingLogger(),
    });
    const ref = `${host}/kiln/base:1`;
    const err = await p.prepareImage({ ref, digest: published.manifestDigest }).catch((e: unknown) => e);
    expect(imageFailureVerdict(ref, err)).toMatchObject({ outcome: "platform_failure", cause: "image.pull_failed" });
  });

  it("refuses a blob tampered with in the registry: discarded, fetched again once, then fails; nothing cached", async () => {
    const img = await publishSmall("kiln/tampered", "1", "original bytes");
    const file = registryBlobFile(img.layer);
    const original = await readFile(file);
    await writeFile(file, Buffer.concat([original.subarray(0, original.length - 4), Buffer.from("EVIL")]));
    const log = capturingLogger();
    const p = preparer("cache-tamper", 1 << 30, log);
    const err = await p.prepareImage({ ref: img.ref, digest: img.digest }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: "IMAGE.DIGEST_MISMATCH" });
    expect(imageFailureVerdict(img.ref, err)).toMatchObject({
      outcome: "platform_failure",
      cause: "image.pull_failed",
    });
    expect(log.lines.filter((l) => l.msg.includes("failed its digest check")).length).toBe(1); // one refetch, then give up
    expect(p.cache.has("blob", img.layer)).toBe(false);
    expect(p.cache.has("rootfs", img.digest)).toBe(false);
    await expect(access(p.cache.rootfsPath(img.digest))).rejects.toThrow();
    await expect(access(p.cache.blobPath(img.layer))).rejects.toThrow();
    // Repaired registry: the same preparer now succeeds.
    await writeFile(file, original);
    const ok = await p.prepareImage({ ref: img.ref, digest: img.digest });
    expect(await readFile(path.join(ok.rootfsDir, "hello.txt"), "utf8")).toBe("original bytes");
    ok.release();
  });

  it("evicts and refetches a cached layer that went bad on disk", async () => {
    const img = await publishSmall("kiln/disk-rot", "1", "good layer");
    const log = capturingLogger();
    const p = preparer("cache-rot", 1 << 30, log);
    (await p.prepareImage({ ref: img.ref, digest: img.digest })).release();
    await p.cache.evict("rootfs", img.digest); // force a fresh unpack from the cached blob
    await writeFile(p.cache.blobPath(img.layer), "rotten");
    const again = await p.prepareImage({ ref: img.ref, digest: img.digest });
    expect(again.cacheHit).toBe(false);
    expect(again.pulledBytes).toBeGreaterThan(0);
    expect(await readFile(path.join(again.rootfsDir, "hello.txt"), "utf8")).toBe("good layer");
    expect(log.lines.some((l) => l.msg.includes("cached image layer failed its digest check"))).toBe(true);
    again.release();
  });

  it("keeps the cache within its byte budget, evicting least recently used entries no attempt holds", async () => {
    const a = await publishSmall("kiln/lru-a", "1", "a".repeat(200_000));
    const b = await publishSmall("kiln/lru-b", "1", "b".repeat(200_000));
    // Room for one image (its blob + rootfs, ~200 kB unpacked) but not two.
    const p = preparer("cache-lru", 300_000);
    const heldA = await p.prepareImage({ ref: a.ref, digest: a.digest });
    const heldB = await p.prepareImage({ ref: b.ref, digest: b.digest });
    // Both in use: nothing may go, even over budget.
    await access(path.join(heldA.rootfsDir, "hello.txt"));
    heldA.release();
    heldB.release();
    const again = await p.prepareImage({ ref: b.ref, digest: b.digest }); // b most recent; enforce budget
    expect(again.cacheHit).toBe(true);
    expect(p.cache.has("rootfs", a.digest)).toBe(false);
    await expect(access(heldA.rootfsDir)).rejects.toThrow();
    expect(p.cache.has("rootfs", b.digest)).toBe(true);
    expect(p.cache.totalBytes()).toBeLessThanOrEqual(300_000);
    again.release();
    // Evicted a comes back by pulling again.
    const back = await p.prepareImage({ ref: a.ref, digest: a.digest });
    expect(back).toMatchObject({ cacheHit: false });
    back.release();
  });
});
