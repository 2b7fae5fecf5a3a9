// Deployable images are reproducible (docs/adr/0046): the same input tree, packed twice into two
// empty caches on top of the same base, with every file's mtime changed in between, gives the same
// layer and manifest digests; one changed byte changes the app layer and nothing else. The layout is
// read back by skopeo (Debian's; nobody on the team wrote it).
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { chmod, link, mkdir, mkdtemp, readdir, readFile, rm, symlink, utimes, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ImageCache } from "../toolchain/index.ts";
import { buildAppImage, writeOciLayout, type AppImage } from "./app-image.ts";
import { packTree } from "./pack-tree.ts";

const exec = promisify(execFile);
const EPOCH = 1_767_225_600; // 2026-01-01, what a commit's time would be
let base: string;
let tree: string;

async function makeTree(dir: string): Promise<void> {
  await mkdir(path.join(dir, "apps/workers/src"), { recursive: true });
  await mkdir(path.join(dir, "node_modules/.bin"), { recursive: true });
  await mkdir(path.join(dir, "node_modules/tsx/dist"), { recursive: true });
  await mkdir(path.join(dir, "apps/web/.next/cache"), { recursive: true });
  await writeFile(path.join(dir, "package.json"), '{"name":"kiln","private":true}\n');
  await writeFile(path.join(dir, "apps/workers/src/index.ts"), 'console.log("workers");\n');
  await writeFile(path.join(dir, "node_modules/tsx/dist/cli.mjs"), "#!/usr/bin/env node\n");
  await chmod(path.join(dir, "node_modules/tsx/dist/cli.mjs"), 0o775);
  await symlink("../tsx/dist/cli.mjs", path.join(dir, "node_modules/.bin/tsx"));
  // npm's hard-linked installs: stored as two files, whatever else links to the inode.
  await link(path.join(dir, "package.json"), path.join(dir, "node_modules/package-copy.json"));
  await writeFile(path.join(dir, "apps/web/.next/cache/junk"), "build cache, never shipped\n");
}

/** Packs `tree` into a fresh cache over a fixed stand-in base and writes a layout; returns both. */
async function build(name: string): Promise<{ image: AppImage; cache: ImageCache; layout: string }> {
  const cache = new ImageCache(path.join(base, name, "cache"));
  const work = await cache.workDir("test");
  const baseTar = path.join(work, "base.tar");
  await mkdir(path.join(base, "base-root/etc"), { recursive: true });
  await writeFile(path.join(base, "base-root/etc/os-release"), "ID=debian\n");
  await packTree({
    root: path.join(base, "base-root"),
    paths: ["etc"],
    prefix: "usr/share/base",
    epoch: EPOCH,
    outTar: baseTar,
    listFile: path.join(work, "b.list"),
  });
  const baseLayer = await cache.putLayer(baseTar);
  const baseConfig = await cache.putBlob(
    Buffer.from(
      JSON.stringify({
        config: { Env: ["PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8"] },
        history: [{ created_by: "base" }],
      }),
    ),
  );
  const appTar = path.join(work, "app.tar");
  await packTree({
    root: tree,
    paths: ["package.json", "apps/workers/src/index.ts", "node_modules", "apps/web/.next"],
    exclude: ["apps/web/.next/cache"],
    prefix: "app",
    epoch: EPOCH,
    outTar: appTar,
    listFile: path.join(work, "a.list"),
  });
  const image = await buildAppImage(cache, {
    name: "kiln/workers",
    tag: "test",
    base: { configDigest: baseConfig, layers: [baseLayer] },
    layers: [{ layer: await cache.putLayer(appTar), createdBy: "kiln image app: repository" }],
    cmd: ["node", "--import", "tsx", "apps/workers/src/index.ts"],
    workingDir: "/app",
    user: "10001:10001",
    env: { NODE_ENV: "production" },
    labels: { "org.opencontainers.image.revision": "0123abc" },
    epoch: EPOCH,
  });
  const layout = path.join(base, name, "layout");
  await writeOciLayout(cache, layout, [image]);
  return { image, cache, layout };
}

const sha = (b: Buffer) => `sha256:${createHash("sha256").update(b).digest("hex")}`;

beforeAll(async () => {
  base = await mkdtemp(path.join(os.tmpdir(), "kiln-app-image-"));
  tree = path.join(base, "tree");
  await makeTree(tree);
});
afterAll(async () => {
  if (base) await rm(base, { recursive: true, force: true });
});

describe("deployable app images", () => {
  it("two builds from the same tree give the same digests, whatever the files' mtimes", async () => {
    const first = await build("one");
    const later = new Date("2031-05-05T00:00:00Z");
    for (const f of ["package.json", "apps/workers/src/index.ts", "node_modules/tsx/dist/cli.mjs"])
      await utimes(path.join(tree, f), later, later);
    const second = await build("two");
    expect(second.image.manifestDigest).toBe(first.image.manifestDigest);
    expect(second.image.layers).toEqual(first.image.layers);
    expect(first.image.manifestDigest).toMatch(/^sha256:[0-9a-f]{64}$/);
  });

  it("one changed byte changes the app layer and the manifest, not the base", async () => {
    const before = await build("three");
    await writeFile(path.join(tree, "apps/workers/src/index.ts"), 'console.log("workerz");\n');
    const after = await build("four");
    await writeFile(path.join(tree, "apps/workers/src/index.ts"), 'console.log("workers");\n');
    expect(after.image.layers[0]).toEqual(before.image.layers[0]);
    expect(after.image.layers[1]?.digest).not.toBe(before.image.layers[1]?.digest);
    expect(after.image.manifestDigest).not.toBe(before.image.manifestDigest);
  });

  it("the layout is well formed: every blob is its digest, the app layer is what was asked for", async () => {
    const { image, layout } = await build("five");
    expect(JSON.parse(await readFile(path.join(layout, "oci-layout"), "utf8"))).toEqual({
      imageLayoutVersion: "1.0.0",
    });
    const index = JSON.parse(await readFile(path.join(layout, "index.json"), "utf8")) as {
      manifests: { digest: string; annotations: Record<string, string> }[];
    };
    expect(index.manifests).toEqual([
      expect.objectContaining({
        digest: image.manifestDigest,
        annotations: { "org.opencontainers.image.ref.name": "kiln/workers:test" },
      }),
    ]);
    for (const f of await readdir(path.join(layout, "blobs/sha256")))
      expect(sha(await readFile(path.join(layout, "blobs/sha256", f)))).toBe(`sha256:${f}`);
    const config = JSON.parse(
      await readFile(path.join(layout, "blobs/sha256", image.configDigest.slice(7)), "utf8"),
    ) as {
      config: { User: string; Env: string[]; Cmd: string[] };
    };
    expect(config.config).toMatchObject({
      User: "10001:10001",
      Cmd: ["node", "--import", "tsx", "apps/workers/src/index.ts"],
    });
    expect(config.config.Env).toEqual(["PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8", "NODE_ENV=production"]);
    const appBlob = path.join(layout, "blobs/sha256", image.layers[1]!.digest.slice(7));
    const { stdout } = await exec("tar", ["-tvzf", appBlob, "--numeric-owner", "--full-time"]);
    const lines = stdout.trim().split("\n");
    expect(lines.some((l) => l.includes("app/apps/web/.next/cache"))).toBe(false);
    expect(lines.find((l) => l.endsWith("app/node_modules/.bin/tsx -> ../tsx/dist/cli.mjs"))).toBeDefined();
    expect(lines.find((l) => l.includes("app/node_modules/package-copy.json"))).toMatch(/^-rw-r--r-- 0\/0 /);
    expect(lines.find((l) => l.includes("app/node_modules/tsx/dist/cli.mjs"))).toMatch(
      /^-rwxr-xr-x 0\/0 .* 2026-01-01 00:00:00 /,
    );
    expect(lines.every((l) => / app\//.test(l))).toBe(true);
  });

  it("skopeo reads the layout and sees the same digest", async () => {
    const { image, layout } = await build("six");
    const { stdout } = await exec("skopeo", ["inspect", "--raw", `oci:${layout}:kiln/workers:test`]);
    expect(sha(Buffer.from(stdout))).toBe(image.manifestDigest);
  });
});
