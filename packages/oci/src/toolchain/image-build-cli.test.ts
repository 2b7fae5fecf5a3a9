// `kiln image build <spec-file>` as a real process (docs/adr/0040): a tiny YAML spec is built into
// an empty cache and pushed to Debian's real docker-registry, which then serves it by digest and by
// tag; a spec the schema refuses exits 2 with the field named.
import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { startRegistry, type RegistryHandle } from "@kiln/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RegistryClient } from "../registry-client.ts";
import { registryEndpoint } from "../registry-config.ts";
import { assertMmdebstrap } from "./debian-layer.ts";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../..");
let base: string;
let registry: RegistryHandle;

function kiln(args: string[]): Promise<{ code: number; out: Record<string, unknown> | null; stderr: string }> {
  return new Promise((resolve) =>
    execFile(
      process.execPath,
      ["--import", "tsx", "scripts/kiln.ts", ...args, "--json"],
      {
        cwd: ROOT,
        env: { ...process.env, KILN_IMAGE_CACHE: path.join(base, "cache"), KILN_DATA_DIR: path.join(base, "data") },
        maxBuffer: 1 << 24,
      },
      (err, stdout, stderr) =>
        resolve({
          code: err ? Number(err.code ?? 1) : 0,
          out: JSON.parse(stdout.trim() || "null") as Record<string, unknown> | null,
          stderr,
        }),
    ),
  );
}

beforeAll(async () => {
  assertMmdebstrap();
  base = await mkdtemp(path.join(os.tmpdir(), "kiln-image-cli-"));
  registry = await startRegistry({ dataDir: path.join(base, "registry") });
});
afterAll(async () => {
  await registry?.stop();
  if (base) await rm(base, { recursive: true, force: true });
});

describe("kiln image build", () => {
  it("builds a YAML spec and publishes it by digest to the registry", { timeout: 600_000 }, async () => {
    const spec = path.join(base, "tiny.yaml");
    await writeFile(
      spec,
      "name: acme/tiny\ntag: '1'\nvariant: extract\npackages: [busybox-static]\nlabels:\n  team: ops\n",
    );
    const r = await kiln(["image", "build", spec, "--registry", registry.host]);
    expect(r.code, r.stderr).toBe(0);
    const digest = String(r.out?.manifest_digest);
    expect(r.out).toMatchObject({
      ref: `${registry.host}/acme/tiny:1`,
      pinned: `${registry.host}/acme/tiny@${digest}`,
      cached: false,
      published: true,
    });
    expect(r.out?.packages).toEqual([expect.stringMatching(/^busybox-static=/)]);
    const client = new RegistryClient(registryEndpoint({ [registry.host]: {} }, registry.host));
    expect((await client.getManifest("acme/tiny", digest)).digest).toBe(digest);
    expect((await client.getManifest("acme/tiny", "1")).bytes.toString()).toContain(digest);

    const again = await kiln(["image", "build", spec, "--registry", registry.host]);
    expect(again.out).toMatchObject({ manifest_digest: digest, cached: true, uploaded_bytes: 0 });
  });

  it("a spec the schema refuses exits 2 naming the field", async () => {
    const spec = path.join(base, "bad.json");
    await writeFile(spec, JSON.stringify({ name: "acme/bad", tag: "1", packages: ["curl && rm -rf /"] }));
    const r = await kiln(["image", "build", spec, "--no-publish"]);
    expect(r.code).toBe(2);
    expect(JSON.stringify(r.out)).toContain("a Debian package name");
  });
});
