// Issue 30 item 5: three real open-source projects of three ecosystems (picocolors: Node.js;
// toolz: Python with pytest; jsmn: C with make), their release tarballs unchanged (downloaded from
// Debian's archive and checked against pinned SHA-256s at test time, cached in
// ~/.cache/kiln/real-projects: e2e/fixtures/real-projects/README.md), run with their own CI commands on Kiln in the toolchain images (ADR 0040), on the process driver
// and on the microVM driver (QEMU under TCG), each suite's own summary checked in the job's log.
// A copy with each library broken by one line fails as user_failure: the suites really run.
// One platform, one registry and the image cache (~/.cache/kiln/images, built once per Debian
// point release: the first run on a fresh machine builds three images and takes minutes) serve
// every case. Needs mmdebstrap, docker-registry, qemu-system-x86 (.ci/run installs them).
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import {
  brokenTree,
  publishRealProjectImages,
  REAL_PROJECTS,
  realProjectsTree,
  realProjectsWorkflow,
  startRegistry,
  type RegistryHandle,
} from "@kiln/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Platform } from "./support/platform.ts";

const PROCESS = "driver-process";
const MICROVM = "driver-microvm";
// Content-addressed, shared with the other microVM suites: only saves the kernel/initramfs build.
const ASSETS_DIR = path.join(os.tmpdir(), "kiln-microvm-assets");
let dir = "";
let registry: RegistryHandle;
let p: Platform;
let tree: Record<string, string> = {};
let t: Awaited<ReturnType<Platform["seedTenant"]>>;

beforeAll(async () => {
  // First: a failed download or checksum fails the suite before anything slow starts.
  tree = await realProjectsTree();
  dir = await mkdtemp(path.join(os.tmpdir(), "kiln-e2e-real-"));
  registry = await startRegistry({ dataDir: path.join(dir, "registry") });
  await publishRealProjectImages(registry.host, (m) => console.log(m));
  // The registry is the platform's own: `image: kiln/node:24` resolves there and is pinned by digest.
  p = new Platform({
    KILN_REGISTRIES: JSON.stringify({ [registry.host]: { platform: true } }),
    KILN_LEASE_TTL_MS: "30000",
    KILN_HEARTBEAT_MS: "1000",
  });
  await p.start();
  t = await p.seedTenant("real", {
    ...tree,
    ".kiln/process.yaml": realProjectsWorkflow(PROCESS),
    ".kiln/microvm.yaml": realProjectsWorkflow(MICROVM),
  });
  await p.startAgent("agent-process", t.agentToken, { KILN_AGENT_LABELS: PROCESS, KILN_REGISTRIES: "" });
  await p.startAgent("agent-microvm", t.agentToken, {
    KILN_AGENT_LABELS: MICROVM,
    KILN_REGISTRIES: "",
    KILN_SANDBOX_DRIVER: "microvm",
    KILN_MICROVM_ACCEL: "tcg",
    KILN_MICROVM_ASSETS: ASSETS_DIR,
  });
}, 3_600_000);
afterAll(async () => {
  await p?.stop();
  await registry?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function trigger(workflow: string, sha: string, key: string): Promise<string> {
  const r = await p.api(
    "POST",
    `/v1/repos/${t.repoId}/workflow-runs`,
    t.token,
    { workflow_path: workflow, commit_sha: sha },
    { "idempotency-key": key },
  );
  expect(r.status).toBe(202);
  return r.json.run_id;
}

async function jobLog(jobId: string, stream: "stdout" | "stderr"): Promise<string> {
  const r = await fetch(`${p.base}/v1/jobs/${jobId}/logs/raw?stream=${stream}`, {
    headers: { authorization: `Bearer ${t.token}` },
  });
  expect(r.status).toBe(200);
  return r.text();
}

/** Runs the three projects on one driver and checks each suite's own summary in its job's log. */
async function runsGreen(workflow: string, key: string, timeoutMs: number): Promise<void> {
  const runId = await trigger(workflow, t.git.headSha, key);
  const run = await p.waitForRun(runId, t.token, (x) => x.status === "completed", timeoutMs);
  const problems: string[] = [];
  for (const project of REAL_PROJECTS) {
    const job = run.jobs.find((j: { name: string }) => j.name === project.name);
    const stdout = await jobLog(job.id, "stdout");
    const wrong = job.outcome === "success" ? project.passed(stdout) : `outcome ${job.outcome} (${job.cause})`;
    if (wrong)
      problems.push(`${project.name}: ${wrong}\n--- stdout\n${stdout}\n--- stderr\n${await jobLog(job.id, "stderr")}`);
  }
  expect(problems, problems.join("\n\n")).toEqual([]);
  expect(run).toMatchObject({ outcome: "success" });
}

describe("real projects' own suites on Kiln", () => {
  it("picocolors (npm test), toolz (pytest) and jsmn (make test) pass on the process driver, in their images", async () => {
    await runsGreen(".kiln/process.yaml", "real-process", 600_000);
  }, 660_000);

  it("the same three pass on the microVM driver (QEMU, TCG), booting the same Debian images", async () => {
    await runsGreen(".kiln/microvm.yaml", "real-microvm", 1_500_000);
  }, 1_560_000);

  it("a copy with each library broken by one line fails as user_failure on both drivers: the suites really run", async () => {
    const sha = await t.git.commit(brokenTree(tree));
    const runs = await Promise.all([
      trigger(".kiln/process.yaml", sha, "broken-process"),
      trigger(".kiln/microvm.yaml", sha, "broken-microvm"),
    ]);
    for (const runId of runs) {
      const run = await p.waitForRun(runId, t.token, (x) => x.status === "completed", 1_500_000);
      expect(run).toMatchObject({ outcome: "user_failure" });
      for (const project of REAL_PROJECTS) {
        const job = run.jobs.find((j: { name: string }) => j.name === project.name);
        expect(job, project.name).toMatchObject({ outcome: "user_failure", cause: "step.failed" });
        expect(project.passed(await jobLog(job.id, "stdout")), project.name).not.toBeNull();
      }
    }
  }, 1_560_000);
});
