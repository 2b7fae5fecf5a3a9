// Real projects' own suites (issue 30 item 6): for each project of e2e/fixtures/real-projects/README.md (its
// release tarball, downloaded and checked against its pinned SHA-256 by @kiln/testkit), in one
// run, the wall time from trigger (POST /v1/repos/:id/workflow-runs) to outcome on the process driver
// and on the microVM driver (QEMU under TCG unless KVM is there), next to the same command run
// directly on the host from a fresh copy of the sources (the floor). Cold: the first run on a fresh
// agent (it pulls and unpacks the toolchain image; the microVM agent also makes its ext4 root);
// warm: the second (image cached on the agent). These projects have no dependencies to install, so
// there is no dependency cache to warm: warm means the agent's image cache. The host's toolchain is
// not the image's (other Node/Python/GCC versions): the floor is what a developer would run.
// Usage: npm run bench -- real-builds [--skip-microvm]
// CPU-heavy (QEMU under TCG): run it on an otherwise idle machine, or say how loaded it was.
import { spawn } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { addRepo, createAgentToken, createApiToken, createOrg } from "@kiln/engine";
import {
  publishRealProjectImages,
  REAL_PROJECTS,
  type RealProject,
  realProjectsTree,
  realProjectsWorkflow,
  startPlatform,
} from "@kiln/testkit";

const skipMicrovm = process.argv.includes("--skip-microvm");
const progress = (m: string) => process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${m}\n`);
const DRIVERS = skipMicrovm ? (["process"] as const) : (["process", "microvm"] as const);
type Driver = (typeof DRIVERS)[number];

/** The project's command on the host, from a fresh copy of its sources; returns seconds. */
async function hostRun(project: RealProject, tree: Record<string, string>): Promise<number> {
  const dir = await mkdtemp(path.join(os.tmpdir(), `kiln-bench-host-${project.name}-`));
  try {
    for (const [key, text] of Object.entries(tree)) {
      if (!key.startsWith(`${project.name}/`)) continue;
      const file = path.join(dir, key.slice(project.name.length + 1));
      await mkdir(path.dirname(file), { recursive: true });
      await writeFile(file, text);
    }
    const t0 = performance.now();
    const code = await new Promise<number>((resolve, reject) => {
      const child = spawn("sh", ["-c", project.command], {
        cwd: dir,
        env: { ...process.env, ...project.env },
        stdio: "ignore",
      });
      child.on("error", reject);
      child.on("exit", (c) => resolve(c ?? -1));
    });
    if (code !== 0) throw new Error(`${project.name} failed on the host (exit ${code})`);
    return (performance.now() - t0) / 1000;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

// Before anything slow: a failed download or checksum ends the bench here.
const tree = await realProjectsTree();
const platform = await startPlatform({ git: true, registry: true, s3: false, postgres: "durable", log: progress });
const results = new Map<string, number>();
try {
  await publishRealProjectImages(platform.registry!.host, progress);
  const db = platform.db;
  const git = platform.git!;
  await createOrg(db, "bench");
  const files: Record<string, string> = { ...tree };
  for (const d of DRIVERS)
    for (const p of REAL_PROJECTS) files[`.kiln/${d}-${p.name}.yaml`] = realProjectsWorkflow(`driver-${d}`, [p]);
  const repo = await git.createRepo("bench.git", files);
  const r = await addRepo(
    db,
    {
      orgSlug: "bench",
      name: "bench/app",
      cloneUrl: repo.cloneUrl,
      webhookSecret: "bench-secret",
      workflowPath: ".kiln/x.yaml",
    },
    git.sourcePolicy,
  );
  const token = (await createApiToken(db, { orgSlug: "bench", role: "member" })).token;
  const agentToken = (await createAgentToken(db, { pool: "default" })).token;
  platform.startWorkers();
  await platform.startWeb("web", { healthTimeoutMs: 120_000 });
  const base = platform.baseUrl();
  const api = async (method: string, p: string, body?: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(`${base}${p}`, {
      method,
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json", ...headers },
      ...(body ? { body: JSON.stringify(body) } : {}),
    });
    return { status: res.status, json: (await res.json()) as any };
  };
  platform.startAgent("agent-process", agentToken, { env: { KILN_AGENT_LABELS: "driver-process" } });
  if (!skipMicrovm)
    platform.startAgent("agent-microvm", agentToken, {
      env: {
        KILN_AGENT_LABELS: "driver-microvm",
        KILN_SANDBOX_DRIVER: "microvm",
        KILN_MICROVM_ACCEL: "auto",
        // The kernel and initramfs are the host's, built once (shared with the e2e suites): not a job's cost.
        KILN_MICROVM_ASSETS: path.join(os.tmpdir(), "kiln-microvm-assets"),
      },
    });

  const triggerToOutcome = async (driver: Driver, project: RealProject, key: string): Promise<number> => {
    const t0 = performance.now();
    const res = await api(
      "POST",
      `/v1/repos/${r.id}/workflow-runs`,
      { workflow_path: `.kiln/${driver}-${project.name}.yaml`, commit_sha: repo.headSha },
      { "idempotency-key": key },
    );
    if (res.status !== 202) throw new Error(`trigger: ${res.status} ${JSON.stringify(res.json)}`);
    for (;;) {
      const run = await api("GET", `/v1/workflow-runs/${res.json.run_id}`);
      if (run.json.status === "completed") {
        if (run.json.outcome !== "success") throw new Error(`${driver} ${project.name}: ${run.json.outcome}`);
        return (performance.now() - t0) / 1000;
      }
      await new Promise((done) => setTimeout(done, 100));
    }
  };

  for (const p of REAL_PROJECTS) {
    for (const phase of ["cold", "warm"]) {
      results.set(`host ${phase} ${p.name}`, await hostRun(p, tree));
      progress(`host ${phase} ${p.name}: ${results.get(`host ${phase} ${p.name}`)!.toFixed(1)} s`);
    }
  }
  for (const d of DRIVERS)
    for (const phase of ["cold", "warm"])
      for (const p of REAL_PROJECTS) {
        const s = await triggerToOutcome(d, p, `${d}-${phase}-${p.name}`);
        results.set(`${d} ${phase} ${p.name}`, s);
        progress(`${d} ${phase} ${p.name}: ${s.toFixed(1)} s`);
      }
} finally {
  await platform.stop();
}

const cell = (key: string, floor: number) => {
  const s = results.get(key);
  return s === undefined ? "—" : `${s.toFixed(1)} s (${(s / floor).toFixed(1)}x)`;
};
console.log(`\nreal projects, trigger -> outcome (ratio to the host's own run of the same command, same phase)`);
console.log(`| project | phase | host (floor) | ${DRIVERS.map((d) => `${d} driver`).join(" | ")} |`);
console.log(`| --- | --- | --- | ${DRIVERS.map(() => "---").join(" | ")} |`);
for (const p of REAL_PROJECTS)
  for (const phase of ["cold", "warm"]) {
    const floor = results.get(`host ${phase} ${p.name}`)!;
    const cells = DRIVERS.map((d) => cell(`${d} ${phase} ${p.name}`, floor));
    console.log(`| ${p.name} (${p.image}) | ${phase} | ${floor.toFixed(2)} s | ${cells.join(" | ")} |`);
  }
