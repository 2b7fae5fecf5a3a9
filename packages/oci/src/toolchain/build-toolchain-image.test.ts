// Reproducible toolchain images (docs/adr/0040): two builds of one spec, each in its own empty image
// cache, give one manifest digest; a third build with the first cache reuses it without building.
// The spec is tiny (mmdebstrap's extract variant with busybox-static) so this stays well within
// CI's budget; the four built-in images are built by `npm run up`, not here. Downloaded .debs are
// shared through one apt archive directory, as the builder allows: they are inputs, not outputs.
import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildToolchainImage, type ToolchainImage } from "./build-toolchain-image.ts";
import { assertMmdebstrap } from "./debian-layer.ts";
import { ImageCache } from "./image-cache.ts";
import { resolveSpec } from "./image-spec.ts";

const execFileAsync = promisify(execFile);
const TINY = { name: "test/tiny", tag: "1", variant: "extract", packages: ["busybox-static"], env: { TINY: "1" } };
let base: string;

beforeAll(async () => {
  // No mmdebstrap: the test fails here with the apt-get command, never skips.
  assertMmdebstrap();
  base = await mkdtemp(path.join(os.tmpdir(), "kiln-toolchain-"));
});
afterAll(async () => {
  if (base) await rm(base, { recursive: true, force: true });
});

describe("toolchain image builder", () => {
  let first: ToolchainImage;

  it("two builds of one spec from empty caches give one digest", { timeout: 600_000 }, async () => {
    const apt = path.join(base, "apt");
    const progress: string[] = [];
    first = await buildToolchainImage(TINY, {
      cacheDir: path.join(base, "a"),
      aptArchiveDir: apt,
      onProgress: (m) => progress.push(m),
    });
    const second = await buildToolchainImage(TINY, { cacheDir: path.join(base, "b"), aptArchiveDir: apt });
    expect(first.cached).toBe(false);
    expect(second.cached).toBe(false);
    expect(second.manifestDigest).toBe(first.manifestDigest);
    expect(second.layers).toEqual(first.layers);
    expect(first.inputHash).toBe(second.inputHash);
    expect(progress.some((m) => m.startsWith("test/tiny:1: building"))).toBe(true);
    // The resolved package versions are recorded, and the layer holds what the package ships.
    expect(first.packages).toHaveLength(1);
    expect(first.packages[0]).toMatch(/^busybox-static=1:\d/);
    const blob = new ImageCache(path.join(base, "a")).blobPath(first.layers[0]?.digest ?? "");
    const { stdout } = await execFileAsync("tar", ["-tzvf", blob], { maxBuffer: 1 << 24 });
    expect(stdout).toMatch(/ \.\/bin\/busybox\n/);
    // What differs between two runs is gone: nothing but empty lock files under apt's lists and caches, or the logs.
    expect(stdout).not.toMatch(/^-\S+ \S+ +[1-9]\d* .* \.\/var\/(lib\/apt\/lists|cache\/apt|log)\//m);
  });

  it("the same inputs reuse the cached image; another spec is another input hash", { timeout: 120_000 }, async () => {
    const again = await buildToolchainImage(TINY, { cacheDir: path.join(base, "a") });
    expect(again.cached).toBe(true);
    expect(again.manifestDigest).toBe(first.manifestDigest);
    const other = resolveSpec({ ...TINY, env: { TINY: "2" } });
    expect(other.env).toEqual({ TINY: "2" });
    const relabelled = await buildToolchainImage(
      { ...TINY, labels: { owner: "ops" } },
      { cacheDir: path.join(base, "a") },
    );
    // Only the config differs: the Debian layer is reused from the layer cache, not rebuilt.
    expect(relabelled.cached).toBe(false);
    expect(relabelled.inputHash).not.toBe(first.inputHash);
    expect(relabelled.layers).toEqual(first.layers);
    expect(relabelled.manifestDigest).not.toBe(first.manifestDigest);
  });

  it("a spec is validated: unknown keys, bad package names and unknown bases are refused", () => {
    expect(() => resolveSpec({ ...TINY, pakages: [] })).toThrow(/pakages/);
    expect(() => resolveSpec({ ...TINY, packages: ["curl; rm -rf /"] })).toThrow(/Debian package name/);
    expect(() => resolveSpec({ ...TINY, base: "ubuntu:24.04" })).toThrow(/neither debian:12 nor a built-in image/);
    const node = resolveSpec({ name: "acme/web", tag: "1", base: "kiln/node:24", packages: ["jq"] });
    expect(node.debian.packages).toEqual(["build-essential", "ca-certificates", "curl", "git", "jq"]);
    expect(node.node?.version).toMatch(/^24\./);
  });
});
