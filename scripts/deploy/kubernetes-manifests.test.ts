// The manifests' offline check (docs/adr/0046), as CI runs it: the example overlay and the bare base
// render with the real kubectl and every object passes the Kubernetes schemas; an overlay that
// breaks one field, and an object of a kind Kubernetes does not have, are refused by name.
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { renderKustomize, validateObjects } from "./kubernetes-manifests.ts";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const BASE = path.join(ROOT, "deploy/kubernetes/base");
const EXAMPLE = path.join(ROOT, "deploy/kubernetes/overlays/example");
let scratch: string;

beforeAll(async () => {
  scratch = await mkdtemp(path.join(os.tmpdir(), "kiln-kustomize-"));
});
afterAll(async () => {
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

/**
 * An overlay in a scratch directory over the real base with one JSON 6902 patch (the fields Debian's
 * kubectl 1.20 reads as well as current ones: bases, patchesJson6902 with a file).
 */
async function overlay(
  name: string,
  target: { group?: string; version: string; kind: string; name: string },
  patch: unknown[],
): Promise<string> {
  const dir = path.join(scratch, name);
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  await writeFile(path.join(dir, "patch.json"), JSON.stringify(patch));
  await writeFile(
    path.join(dir, "kustomization.yaml"),
    JSON.stringify({ bases: [path.relative(dir, BASE)], patchesJson6902: [{ target, path: "patch.json" }] }),
  );
  return dir;
}

describe("Kubernetes manifests", () => {
  it("the example overlay renders and every object passes the Kubernetes schemas", async () => {
    const objects = await renderKustomize(EXAMPLE);
    const kinds = objects.map((o) => `${o.kind}/${o.metadata.name}`);
    for (const k of [
      "Deployment/kiln-web",
      "Service/kiln-web",
      "HorizontalPodAutoscaler/kiln-web",
      "Deployment/kiln-workers",
      "Job/kiln-migrations",
      "DaemonSet/kiln-host-agent",
      "Ingress/kiln-web",
      "Namespace/kiln",
    ])
      expect(kinds).toContain(k);
    expect(objects.every((o) => o.kind === "Namespace" || o.metadata.namespace === "kiln")).toBe(true);
    expect(await validateObjects(objects)).toEqual([]);
  });

  it("the base alone renders and validates", async () => {
    expect(await validateObjects(await renderKustomize(BASE))).toEqual([]);
  });

  it("refuses an overlay that makes a container port a string, naming the object and the field", async () => {
    const dir = await overlay("bad-port", { group: "apps", version: "v1", kind: "Deployment", name: "kiln-web" }, [
      { op: "replace", path: "/spec/template/spec/containers/0/ports/0/containerPort", value: "3000" },
    ]);
    const problems = await validateObjects(await renderKustomize(dir));
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/^Deployment\/kiln-web: .*containerPort must be integer/);
  });

  it("refuses a DaemonSet whose container lost its required name, and an HPA with a fractional replica bound", async () => {
    const noName = await overlay(
      "no-name",
      { group: "apps", version: "v1", kind: "DaemonSet", name: "kiln-host-agent" },
      [{ op: "remove", path: "/spec/template/spec/containers/0/name" }],
    );
    expect(await validateObjects(await renderKustomize(noName))).toEqual([
      expect.stringMatching(/^DaemonSet\/kiln-host-agent: .*must have required property name/),
    ]);
    const badHpa = await overlay(
      "bad-hpa",
      { group: "autoscaling", version: "v2", kind: "HorizontalPodAutoscaler", name: "kiln-web" },
      [{ op: "replace", path: "/spec/minReplicas", value: 1.5 }],
    );
    expect(await validateObjects(await renderKustomize(badHpa))).toEqual([
      expect.stringMatching(/^HorizontalPodAutoscaler\/kiln-web: .*minReplicas must be integer/),
    ]);
  });

  it("an object of a kind the Kubernetes API does not have is an error, not a pass", async () => {
    const [web] = (await renderKustomize(BASE)).filter((o) => o.kind === "Deployment");
    expect(web).toBeDefined();
    const problems = await validateObjects([
      { ...web!, kind: "Deploymnet" },
      { ...web!, apiVersion: "../../../etc/v1" },
    ]);
    expect(problems).toEqual([
      "Deploymnet/kiln-web: no Kubernetes schema for apps/v1 Deploymnet",
      "Deployment/kiln-web: no Kubernetes schema for ../../../etc/v1 Deployment",
    ]);
  });

  it("a kustomization kubectl cannot build fails the render with kubectl's reason", async () => {
    const dir = path.join(scratch, "missing");
    await mkdir(dir, { recursive: true });
    await writeFile(path.join(dir, "kustomization.yaml"), "resources:\n  - nowhere.yaml\n");
    await expect(renderKustomize(dir)).rejects.toThrow(/nowhere\.yaml/);
  });
});
