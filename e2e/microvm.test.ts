import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { readdir, readFile } from "node:fs/promises";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Platform, type Proc } from "./support/platform.ts";

// Issue 3, end to end on the microvm driver: the production web server, the workers and a host agent
// process with KILN_SANDBOX_DRIVER=microvm and a warm pool of one (QEMU under TCG: nested KVM hangs
// on this machine). A run's step runs inside a VM (the guest kernel's command line shows it), gets
// the checked-out workspace, reaches the org's allow-listed server through the egress proxy and is
// denied anything else; its VM is gone afterwards; each sandbox reports pool hit or miss.
// A failing step is user_failure with its exit code; a job past its timeout is timed_out.
// Needs qemu-system-x86, linux-image-cloud-amd64, busybox-static, e2fsprogs (.ci/run installs them).
const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, "..");
let allowed: http.Server;
const p = new Platform({ KILN_LEASE_TTL_MS: "30000", KILN_HEARTBEAT_MS: "1000" });
let tenant: Awaited<ReturnType<Platform["seedTenant"]>>;
let agent: Proc;
// Content-addressed, shared with the host-agent tests: only saves the asset build.
const ASSETS_DIR = path.join(os.tmpdir(), "kiln-microvm-assets");

// The guest's proxy is $HTTP_PROXY (http://10.0.2.100:3128); the base image has busybox nc only,
// which sends the request from a script so it does not half-close (see microvm-egress.test.ts).
const workflow = (allowedPort: number) => `version: 1
jobs:
  - name: build
    steps:
      - echo "hello from the microvm"; cat README.md; grep -o i8042.noaux /proc/cmdline
      - |
        printf '%s\\n' 'printf "$REQ"; cat >&2' > /tmp/client.sh
        get() { REQ="GET http://$1/$2 HTTP/1.1\\r\\nHost: $1\\r\\nConnection: close\\r\\n\\r\\n" timeout 30 nc 10.0.2.100 3128 -e sh /tmp/client.sh 2>&1 | head -1; }
        echo "allowed: $(get localhost:${allowedPort} x)"
        echo "elsewhere: $(get example.com "")"
`;

interface SandboxLog {
  attempt_id: string;
  run_dir: string;
  pool_hit: boolean;
  pool_hits: number;
  pool_misses: number;
}

function agentLines(): Array<Record<string, unknown>> {
  return agent
    .output()
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => {
      try {
        return JSON.parse(l) as Record<string, unknown>;
      } catch {
        return {};
      }
    });
}

const sandboxLogs = () => agentLines().filter((l) => l.msg === "microvm sandbox created") as unknown as SandboxLog[];
const poolFills = () => agentLines().filter((l) => l.msg === "warm pool: sandbox ready").length;

async function until(pred: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await pred())) {
    if (Date.now() > deadline) throw new Error(`${what} did not happen in ${timeoutMs} ms\n${p.logs()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function processesMentioning(text: string): Promise<number[]> {
  const found: number[] = [];
  for (const entry of await readdir("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const cmdline = await readFile(`/proc/${entry}/cmdline`, "utf8").catch(() => "");
    if (cmdline.includes(text)) found.push(Number(entry));
  }
  return found;
}

async function jobLog(jobId: string, stream: "stdout" | "stderr"): Promise<string> {
  const r = await fetch(`${p.base}/v1/jobs/${jobId}/logs/raw?stream=${stream}`, {
    headers: { authorization: `Bearer ${tenant.token}` },
  });
  expect(r.status).toBe(200);
  return r.text();
}

async function attemptIdOf(jobId: string): Promise<string> {
  const rows = await p.db.$queryRaw<{ id: string }[]>`SELECT id FROM attempt WHERE job_id = ${jobId}::uuid`;
  return rows[0]?.id ?? "";
}

async function trigger(sha: string, key: string): Promise<string> {
  const r = await p.api(
    "POST",
    `/v1/repos/${tenant.repoId}/workflow-runs`,
    tenant.token,
    { workflow_path: ".kiln/workflow.yaml", commit_sha: sha },
    { "idempotency-key": key },
  );
  expect(r.status).toBe(202);
  return r.json.run_id;
}

beforeAll(async () => {
  allowed = http.createServer((_req, res) => res.end("hello from the allowed server"));
  const allowedPort = await new Promise<number>((resolve) =>
    allowed.listen(0, "127.0.0.1", () => resolve((allowed.address() as AddressInfo).port)),
  );
  await p.start();
  tenant = await p.seedTenant(
    "vm",
    { ".kiln/workflow.yaml": workflow(allowedPort), "README.md": "checked out into the guest\n" },
    { member: "dev" },
  );
  await run(
    process.execPath,
    ["--import", "tsx", "scripts/kiln.ts", "egress", "allow", "vm", `localhost:${allowedPort}`, "--json"],
    { cwd: ROOT, env: { ...process.env, DATABASE_URL: p.dbUrl } },
  );
  agent = await p.startAgent("agent-1", tenant.agentToken, {
    KILN_SANDBOX_DRIVER: "microvm",
    KILN_WARM_POOL_SIZE: "1",
    KILN_MICROVM_ACCEL: "tcg",
    KILN_MICROVM_ASSETS: ASSETS_DIR,
    KILN_CANCEL_GRACE_MS: "2000",
    // The allowed server is on this host's loopback, which egress refuses by default (egress.test.ts).
    KILN_EGRESS_ALLOW_INTERNAL: "true",
  });
  // The first job must find a restored VM waiting (the snapshot is saved once per asset key).
  await until(() => poolFills() >= 1, 240_000, "the warm pool's first VM");
}, 300_000);
afterAll(async () => {
  await p.stop();
  allowed?.close();
});

describe("microvm driver through the control plane", () => {
  it("runs a job in a warm VM: success, step output in the log, egress mediated, VM destroyed", async () => {
    const runId = await trigger(tenant.git.headSha, "vm-ok");
    const done = await p.waitForRun(runId, tenant.token, (x) => x.status === "completed", 120_000);
    expect(done).toMatchObject({ outcome: "success" });
    const job = done.jobs[0];
    const stdout = await jobLog(job.id, "stdout");
    expect(stdout).toContain("hello from the microvm");
    expect(stdout).toContain("checked out into the guest");
    // The guest kernel's command line (the host's has no such flag): the step ran in the VM.
    expect(stdout).toContain("i8042.noaux");
    expect(stdout).toContain("allowed: HTTP/1.1 200");
    expect(stdout).toMatch(/elsewhere: HTTP\/1\.1 403/);
    expect(await jobLog(job.id, "stderr")).toContain("kiln egress denied: example.com is not allowed for trusted runs");
    // Both decisions are recorded against the run (reported by the agent before its completion).
    const egress = await p.api("GET", `/v1/workflow-runs/${runId}/egress`, tenant.token);
    expect(egress.status).toBe(200);
    const seen = egress.json.events.map((e: any) => [e.host, e.decision, e.reason]);
    expect(seen).toContainEqual(["localhost", "allowed", "allow_list"]);
    expect(seen).toContainEqual(["example.com", "denied", "not_on_allow_list"]);

    const attemptId = await attemptIdOf(job.id);
    const created = sandboxLogs().find((l) => l.attempt_id === attemptId);
    expect(created, "the agent reports how the sandbox was made").toBeDefined();
    expect(created!.pool_hit).toBe(true);
    // Destroyed after the job: no QEMU (or relay) names its run directory, and the directory is gone.
    await until(
      async () => !existsSync(created!.run_dir) && (await processesMentioning(created!.run_dir)).length === 0,
      30_000,
      "the VM's teardown",
    );
  }, 180_000);

  it("a failing step is user_failure with its exit code, and a job past its timeout is timed_out; pool hit or miss is reported for each", async () => {
    const sha = await tenant.git.commit({
      ".kiln/workflow.yaml": 'version: 1\njobs:\n  - name: fails\n    steps: ["echo about to fail; exit 3"]\n',
    });
    const slowSha = await tenant.git.commit({
      ".kiln/workflow.yaml":
        'version: 1\njobs:\n  - name: slow\n    timeout_minutes: 1\n    steps: ["echo started; sleep 600"]\n',
    });
    await until(() => poolFills() >= 2, 120_000, "the pool refill");
    // Both at once with a pool of one: whichever is claimed second may find the pool empty.
    const [failId, slowId] = await Promise.all([trigger(sha, "vm-fail"), trigger(slowSha, "vm-slow")]);
    const failed = await p.waitForRun(failId, tenant.token, (x) => x.status === "completed", 120_000);
    expect(failed).toMatchObject({ outcome: "user_failure", cause: "step.failed" });
    expect(failed.jobs[0]).toMatchObject({ outcome: "user_failure", cause: "step.failed" });
    expect(failed.jobs[0].attempts[0].exit_code).toBe(3);
    expect(await jobLog(failed.jobs[0].id, "stdout")).toContain("about to fail");

    const slow = await p.waitForRun(slowId, tenant.token, (x) => x.status === "completed", 180_000);
    expect(slow).toMatchObject({ outcome: "timed_out" });
    expect(slow.jobs[0]).toMatchObject({ outcome: "timed_out", cause: "job.timeout" });
    expect(await jobLog(slow.jobs[0].id, "stdout")).toContain("started");

    const logs = sandboxLogs();
    expect(logs).toHaveLength(3);
    for (const l of logs) expect(typeof l.pool_hit).toBe("boolean");
    const last = logs[logs.length - 1]!;
    expect(last.pool_hits + last.pool_misses).toBe(3);
    expect(last.pool_hits).toBeGreaterThanOrEqual(2);
    for (const l of logs) {
      await until(
        async () => !existsSync(l.run_dir) && (await processesMentioning(l.run_dir)).length === 0,
        30_000,
        `teardown of ${l.run_dir}`,
      );
    }
  }, 300_000);
});
