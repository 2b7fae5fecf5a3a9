// Kiln's own images (docs/adr/0046): web, workers and host agent, built from this checkout without a
// Docker daemon by the same content-addressed writer as the toolchain images. Base: kiln/node:24
// (Debian 12 + the pinned Node.js; the host agent's base adds QEMU, a kernel and mkfs). On top, one
// app layer shared by all three: the tracked files, the installed node_modules (tsx runs the
// TypeScript sources, as `npm run up` does) and the generated Prisma client; web adds its
// `next build` output. Same checkout and node_modules -> same digests (packTree's fixed tar options).
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import {
  type AppImage,
  buildAppImage,
  buildToolchainImage,
  BUILTIN_SPECS,
  type ImageSpec,
  ImageCache,
  packTree,
  type LayerDescriptor,
  writeOciLayout,
} from "@kiln/oci";
import { buildWebIfStale } from "@kiln/testkit";

export const DEPLOYABLE_APPS = ["web", "workers", "host-agent"] as const;
export type DeployableApp = (typeof DEPLOYABLE_APPS)[number];

/** The host agent's runtime: QEMU, the guest kernel, mkfs for work disks, busybox for the guest's init, ip. */
const HOST_AGENT_BASE: ImageSpec = {
  name: "kiln/host-agent-runtime",
  tag: "12",
  base: "kiln/node:24",
  packages: ["busybox-static", "e2fsprogs", "iproute2", "linux-image-cloud-amd64", "qemu-system-x86"],
};
const NODE_BASE = BUILTIN_SPECS.find((s) => s.name === "kiln/node");

/** Non-root for web and workers; the agent is root because it jails each QEMU itself (ADR 0011). */
const APPS: Record<DeployableApp, { cmd: string[]; workingDir: string; user: string; base: ImageSpec }> = {
  web: {
    cmd: ["node", "/app/node_modules/next/dist/bin/next", "start", "--port", "3000"],
    workingDir: "/app/apps/web",
    user: "10001:10001",
    base: NODE_BASE!,
  },
  workers: {
    cmd: ["node", "--import", "tsx", "apps/workers/src/index.ts"],
    workingDir: "/app",
    user: "10001:10001",
    base: NODE_BASE!,
  },
  "host-agent": {
    cmd: ["node", "--import", "tsx", "apps/host-agent/src/index.ts"],
    workingDir: "/app",
    user: "0:0",
    base: HOST_AGENT_BASE,
  },
};

const git = (root: string, args: string[]) => execFileSync("git", ["-C", root, ...args], { encoding: "utf8" });

/** The checkout's identity: the commit (plus `-dirty` when tracked files differ) and its time. */
function revision(root: string): { tag: string; epoch: number; commit: string } {
  const commit = git(root, ["rev-parse", "HEAD"]).trim();
  const dirty = git(root, ["status", "--porcelain", "--untracked-files=no"]).trim() !== "";
  return {
    commit,
    tag: `${commit.slice(0, 12)}${dirty ? "-dirty" : ""}`,
    epoch: Number(git(root, ["log", "-1", "--format=%ct"])),
  };
}

/** Tracked files that exist, every workspace's node_modules, and the generated Prisma client. */
function appPaths(root: string): string[] {
  const tracked = git(root, ["ls-files", "-z"])
    .split("\0")
    .filter((f) => f && existsSync(path.join(root, f)));
  const generated = "packages/db/src/generated";
  if (!existsSync(path.join(root, generated)))
    throw new Error(`${generated} is missing: run npm install (it generates the Prisma client)`);
  const workspaces = git(root, ["ls-files", "-z", "--", "*/package.json"])
    .split("\0")
    .map((f) => path.dirname(f))
    .filter((d) => d && d !== ".");
  const modules = [".", ...workspaces]
    .map((d) => path.join(d, "node_modules"))
    .filter((d) => existsSync(path.join(root, d)));
  return [...tracked, ...modules, generated];
}

async function layer(
  cache: ImageCache,
  root: string,
  name: string,
  opts: { paths: string[]; exclude?: string[]; epoch: number },
): Promise<LayerDescriptor> {
  const work = await cache.workDir(`app-${name}`);
  const tar = path.join(work, `${name}.tar`);
  await packTree({ root, prefix: "app", outTar: tar, listFile: path.join(work, "paths"), ...opts });
  return cache.putLayer(tar);
}

/** Builds the named apps' images from `root` and writes them as one OCI layout into `outDir`. */
export async function buildDeployableImages(opts: {
  root: string;
  apps: readonly DeployableApp[];
  cacheDir: string;
  outDir: string;
  log: (m: string) => void;
}): Promise<AppImage[]> {
  const cache = new ImageCache(opts.cacheDir);
  const rev = revision(opts.root);
  if (opts.apps.includes("web")) await buildWebIfStale(opts.root, { ...process.env, NODE_ENV: "production" }, opts.log);
  opts.log(`app layer: tracked files + node_modules of ${rev.tag} (packing and compressing take a minute)`);
  const app = await layer(cache, opts.root, "repo", {
    paths: appPaths(opts.root),
    exclude: ["node_modules/.cache", "apps/web/.next"],
    epoch: rev.epoch,
  });
  const images: AppImage[] = [];
  for (const name of opts.apps) {
    const def = APPS[name];
    const base = await buildToolchainImage(def.base, { cacheDir: opts.cacheDir, onProgress: opts.log });
    const layers = [{ layer: app, createdBy: `kiln image app: ${rev.commit} tracked files + node_modules` }];
    if (name === "web")
      layers.push({
        layer: await layer(cache, opts.root, "web-next", {
          paths: ["apps/web/.next"],
          exclude: ["apps/web/.next/cache"],
          epoch: rev.epoch,
        }),
        createdBy: "kiln image app: next build",
      });
    const image = await buildAppImage(cache, {
      name: `kiln/${name}`,
      tag: rev.tag,
      base: { configDigest: base.configDigest, layers: base.layers },
      layers,
      cmd: def.cmd,
      workingDir: def.workingDir,
      user: def.user,
      env: { NODE_ENV: "production" },
      labels: {
        "org.opencontainers.image.revision": rev.commit,
        "org.opencontainers.image.source": "kiln",
        "dev.kiln.base": `${base.name}:${base.tag}@${base.manifestDigest}`,
      },
      epoch: rev.epoch,
    });
    opts.log(`kiln/${name}:${rev.tag} ${image.manifestDigest}`);
    images.push(image);
  }
  await writeOciLayout(cache, opts.outDir, images);
  return images;
}
