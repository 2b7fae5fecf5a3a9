// `image build <spec-file>`: an operator builds a toolchain image from a short spec (YAML or JSON:
// name, tag, base, packages, node, env, labels; docs/adr/0040) and publishes it by digest to the
// platform registry, where workflows then name it `<name>:<tag>` (short names for kiln/...).
// Reproducible and cached by input hash, like the built-in images `npm run up` provides.
import { readFileSync } from "node:fs";
import path from "node:path";
import { parseRegistryConfig, parseSpecText } from "@kiln/oci";
import { buildDeployableImages, DEPLOYABLE_APPS, type DeployableApp } from "../lib/images/deployable-images.ts";
import { buildAndPublish, imageCacheDir } from "../lib/images/toolchain-images.ts";
import { arg, opt, type CliCommand, UsageError } from "./command.ts";

/** --registry, else the registry `npm run up` recorded in $KILN_DATA_DIR/instance.json, else none (build only). */
function targetRegistry(explicit: string | undefined): string | null {
  if (explicit) return explicit;
  const dataDir = path.resolve(process.env.KILN_DATA_DIR ?? ".kiln-data");
  try {
    const info = JSON.parse(readFileSync(path.join(dataDir, "instance.json"), "utf8")) as { platformRegistry?: string };
    return info.platformRegistry ?? null;
  } catch {
    return null;
  }
}

function readSpec(file: string): unknown {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    throw new UsageError(`cannot read ${file}: ${e instanceof Error ? e.message : String(e)}`);
  }
  try {
    return parseSpecText(text);
  } catch (e) {
    throw new UsageError(`${file} is not a YAML or JSON image spec: ${e instanceof Error ? e.message : String(e)}`);
  }
}

const build: CliCommand = {
  name: "image build",
  usage:
    "image build <spec-file> [--registry host:port] [--no-publish]\n" +
    "      builds (or reuses, by input hash) a Debian-based image from a YAML/JSON spec and pushes it by digest",
  options: { registry: { type: "string" }, "no-publish": { type: "boolean", default: false } },
  offline: true,
  async run(ctx) {
    const spec = readSpec(arg(ctx, 0, "spec-file"));
    const registry = ctx.values["no-publish"] ? null : targetRegistry(opt(ctx.values, "registry"));
    const log = ctx.values.json ? () => undefined : (m: string) => process.stderr.write(`${m}\n`);
    let published;
    try {
      published = await buildAndPublish(spec, {
        registry,
        config: parseRegistryConfig(process.env.KILN_REGISTRIES),
        log,
      });
    } catch (e) {
      // A spec the schema refuses is the operator's input error: usage, exit 2.
      if (e instanceof Error && e.name === "ZodError") throw new UsageError(`invalid image spec: ${e.message}`);
      throw e;
    }
    const { image, ref, pinned, sizeBytes, uploadedBytes, seconds } = published;
    ctx.out(
      `${ref}\n  pinned:   ${pinned}\n  size:     ${(sizeBytes / 2 ** 20).toFixed(1)} MiB compressed, ${image.layers.length} layer(s)\n` +
        `  packages: ${image.packages.length} Debian packages${image.node ? `, ${image.node.node.split(" ")[0]}` : ""}\n` +
        `  ${image.cached ? "cached" : "built"} in ${seconds.toFixed(1)} s; ${registry ? `pushed ${uploadedBytes} new bytes to ${registry}` : "not published (no --registry and no running instance)"}`,
      {
        ref,
        pinned,
        manifest_digest: image.manifestDigest,
        input_hash: image.inputHash,
        cached: image.cached,
        size_bytes: sizeBytes,
        uploaded_bytes: uploadedBytes,
        published: registry !== null,
        packages: image.packages,
      },
    );
    return 0;
  },
};

const REPO_ROOT = path.resolve(import.meta.dirname, "../..");
const isApp = (a: string): a is DeployableApp => (DEPLOYABLE_APPS as readonly string[]).includes(a);

const app: CliCommand = {
  name: "image app",
  usage:
    "image app [web|workers|host-agent ...] [--out dir]\n" +
    "      builds Kiln's own images from this checkout (no Docker daemon) into an OCI layout (default .artifacts/images)",
  options: { out: { type: "string" } },
  offline: true,
  async run(ctx) {
    const unknown = ctx.args.filter((a) => !isApp(a));
    if (unknown.length > 0)
      throw new UsageError(`unknown app ${unknown.join(", ")} (one of ${DEPLOYABLE_APPS.join(", ")})`);
    const apps = ctx.args.length > 0 ? ctx.args.filter(isApp) : [...DEPLOYABLE_APPS];
    const outDir = path.resolve(opt(ctx.values, "out") ?? path.join(REPO_ROOT, ".artifacts/images"));
    const log = ctx.values.json ? () => undefined : (m: string) => process.stderr.write(`${m}\n`);
    const t0 = performance.now();
    const images = await buildDeployableImages({ root: REPO_ROOT, apps, cacheDir: imageCacheDir(), outDir, log });
    const seconds = (performance.now() - t0) / 1000;
    ctx.out(
      `${images.map((i) => `${i.name}:${i.tag}  ${i.manifestDigest}`).join("\n")}\n  OCI layout: ${outDir} (${seconds.toFixed(1)} s); push with skopeo copy oci:${outDir}:<name:tag> docker://<registry>/<name:tag>`,
      {
        layout: outDir,
        images: images.map((i) => ({
          ref: `${i.name}:${i.tag}`,
          manifest_digest: i.manifestDigest,
          layers: i.layers.length,
        })),
      },
    );
    return 0;
  },
};

export const imageCommands: CliCommand[] = [build, app];
