// Issue 3 end to end: real web server, workers, a host agent and Debian's docker-registry with
// htpasswd auth. A job naming the base image by tag is pinned to its digest at freeze, the agent
// pulls and verifies it before the sandbox exists and reports image preparation as its own phase;
// a digest that is not in the registry is the user's failure, named; a registry the operator did not
// list is never contacted (docs/adr/0017). The agent has no KILN_REGISTRIES of its own: it learns
// the registry from the control plane at session start (issue 30).
import { mkdtemp, readdir, rm } from "node:fs/promises";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { publishBaseImage, startRegistry, type PublishedImage, type RegistryHandle } from "@kiln/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Platform } from "./support/platform.ts";

const workflow = (image: string) =>
  `version: 1\njobs:\n  - name: in-image\n    image: ${image}\n    steps: ["echo ran"]\n`;
const CREDS = { username: "kiln", password: "e2e-registry" };
let dir = "";
let registry: RegistryHandle;
let published: PublishedImage;
let p: Platform;
let t: Awaited<ReturnType<Platform["seedTenant"]>>;
let workDir = "";

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "kiln-e2e-images-"));
  registry = await startRegistry({ dataDir: path.join(dir, "registry"), basicAuth: CREDS });
  published = await publishBaseImage({ registry: registry.host, config: { [registry.host]: CREDS } });
  p = new Platform({ KILN_REGISTRIES: JSON.stringify({ [registry.host]: CREDS }) });
  await p.start();
  t = await p.seedTenant("img", { ".kiln/workflow.yaml": workflow(published.ref) });
  workDir = path.join(dir, "agent");
  // Started as the README says, with no registry of its own (issue 30): it pulls with the list (and
  // the credentials: a platform pool) the control plane tells it when its session starts.
  await p.startAgent("agent-img", t.agentToken, { KILN_WORK_DIR: workDir, KILN_REGISTRIES: "" });
}, 180_000);
afterAll(async () => {
  await p?.stop();
  await registry?.stop();
  await rm(dir, { recursive: true, force: true });
});

describe("job images", () => {
  it("pins the tag at freeze, pulls by digest before the sandbox, reports image time separately", async () => {
    const r = await p.api(
      "POST",
      `/v1/repos/${t.repoId}/workflow-runs`,
      t.token,
      { workflow_path: ".kiln/workflow.yaml", commit_sha: t.git.headSha },
      { "idempotency-key": "img-1" },
    );
    expect(r.status).toBe(202);
    const run = await p.waitForRun(r.json.run_id, t.token, (x) => x.status === "completed", 120_000);
    expect(run).toMatchObject({ outcome: "success" });
    const defs = await p.db.$queryRaw<
      { definition: { jobs: { image: unknown }[] } }[]
    >`SELECT definition FROM workflow_run WHERE id = ${r.json.run_id}::uuid`;
    expect(defs[0]!.definition.jobs[0]!.image).toEqual({ ref: published.ref, digest: published.manifestDigest });
    const phases = run.jobs[0].attempts[0].phases;
    expect(phases.image_preparation_ms).toBeGreaterThan(0);
    expect(phases.dispatch_ms).toBeGreaterThanOrEqual(0);
    // The agent's cache now holds the unpacked base image under its manifest digest.
    const rootfs = await readdir(path.join(workDir, ".images", "rootfs"));
    expect(rootfs).toContain(published.manifestDigest.slice("sha256:".length));
  });

  it("a pinned digest the registry does not have fails the job as user_failure image.not_found", async () => {
    const missing = `${registry.host}/kiln/base@sha256:${"0".repeat(64)}`;
    const sha = await t.git.commit({ ".kiln/workflow.yaml": workflow(missing) });
    const r = await p.api(
      "POST",
      `/v1/repos/${t.repoId}/workflow-runs`,
      t.token,
      { workflow_path: ".kiln/workflow.yaml", commit_sha: sha },
      { "idempotency-key": "img-2" },
    );
    expect(r.status).toBe(202);
    const run = await p.waitForRun(r.json.run_id, t.token, (x) => x.status === "completed", 120_000);
    expect(run.jobs[0]).toMatchObject({ outcome: "user_failure", cause: "image.not_found" });
    expect(run.jobs[0].attempts).toHaveLength(1);
  });

  it("an image on a registry KILN_REGISTRIES does not list fails the run at freeze, and that registry hears nothing", async () => {
    const heard: string[] = [];
    const unlisted = http.createServer((req, res) => {
      heard.push(req.url ?? "");
      res.writeHead(404).end();
    });
    await new Promise<void>((r) => unlisted.listen(0, "127.0.0.1", r));
    try {
      const ref = `127.0.0.1:${(unlisted.address() as AddressInfo).port}/kiln/base:1`;
      const sha = await t.git.commit({ ".kiln/workflow.yaml": workflow(ref) });
      const r = await p.api(
        "POST",
        `/v1/repos/${t.repoId}/workflow-runs`,
        t.token,
        { workflow_path: ".kiln/workflow.yaml", commit_sha: sha },
        { "idempotency-key": "img-3" },
      );
      expect(r.status).toBe(202);
      const run = await p.waitForRun(r.json.run_id, t.token, (x) => x.status === "completed", 120_000);
      // Policy refused the image: the sixth outcome, not the user's code and not the platform (issue 20).
      expect(run).toMatchObject({ outcome: "blocked_by_policy", cause: "image.not_allowed" });
      expect(heard).toEqual([]);
    } finally {
      unlisted.close();
    }
  });
});
