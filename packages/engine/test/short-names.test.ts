// Short names (docs/adr/0040): `kiln/node:24` resolves in the registry marked as the platform's and
// is frozen as that registry's full reference, pinned by digest; an unknown short name, or one on an
// installation without a platform registry, is the user's error with a message that says why.
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type { WorkflowDefinition } from "@kiln/domain";
import type { RegistryConfig } from "@kiln/oci";
import { publishBaseImage, startRegistry, type PublishedImage, type RegistryHandle } from "@kiln/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pinImages, resolveImage } from "../src/images/index.ts";

let base: string;
let registry: RegistryHandle;
let config: RegistryConfig;
let node: PublishedImage;

beforeAll(async () => {
  base = await mkdtemp(path.join(os.tmpdir(), "kiln-short-names-"));
  registry = await startRegistry({ dataDir: path.join(base, "registry") });
  config = { [registry.host]: { platform: true } };
  // Any image serves: what is under test is where the name resolves, not what the image holds.
  node = await publishBaseImage({ registry: registry.host, name: "kiln/node:24", config });
});
afterAll(async () => {
  await registry?.stop();
  await rm(base, { recursive: true, force: true });
});

describe("short names", () => {
  it("kiln/node:24 resolves in the platform registry, pinned by the manifest digest", async () => {
    const r = await resolveImage(config, "kiln/node:24");
    expect(r).toEqual({
      ok: true,
      ref: "kiln/node:24",
      digest: node.manifestDigest,
      pinned: `${registry.host}/kiln/node@${node.manifestDigest}`,
    });
  });

  it("a frozen job carries the full reference and digest, also as the pool default", async () => {
    const def = {
      jobs: [
        { name: "a", image: { ref: "kiln/node:24" }, steps: [] },
        { name: "b", steps: [] },
      ],
    } as unknown as WorkflowDefinition;
    const r = await pinImages(def, config, { default: "kiln/node:24" });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    for (const job of r.definition.jobs)
      expect(job.image).toEqual({ ref: `${registry.host}/kiln/node:24`, digest: node.manifestDigest });
  });

  it("an unknown short name is the user's failure naming the built-in images", async () => {
    const r = await resolveImage(config, "kiln/nodejs:24");
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.kind).toBe("not_found");
    expect(r.cause).toBe("image.not_found");
    expect(r.message).toContain("kiln/nodejs:24 is not one of the platform's images");
    expect(r.message).toContain("kiln/build-base:12, kiln/node:24, kiln/jdk:17, kiln/python:3");
  });

  it("without a platform registry a short name is an invalid reference, not a Docker Hub lookup", async () => {
    const r = await resolveImage({ [registry.host]: {} }, "kiln/node:24");
    expect(r).toMatchObject({ ok: false, kind: "invalid", cause: "image.invalid_ref" });
    if (!r.ok) expect(r.message).toContain('"platform": true');
  });
});
