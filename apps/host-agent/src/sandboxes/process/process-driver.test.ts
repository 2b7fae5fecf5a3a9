// Contract test for the process SandboxDriver, run once with namespaces as probed on this host
// ("auto") and once forced off ("off", plain processes), so both code paths are always exercised.
import { randomUUID } from "node:crypto";
import { access, mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildStepEnv } from "../../attempts/index.ts";
import type { JobTicket } from "../../control-client.ts";
import type { Sandbox, StepResult } from "../sandbox-driver.ts";
import { createProcessDriver, type ProcessDriver } from "./process-driver.ts";

const BASE_ENV = { PATH: "/usr/local/bin:/usr/bin:/bin" };

interface Captured extends StepResult {
  stdout: string;
  stderr: string;
  stdoutBytes: number;
}

async function run(
  sandbox: Sandbox,
  command: string,
  env: Record<string, string> = {},
  workingDirectory?: string,
): Promise<Captured> {
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  const result = await sandbox.runStep(
    command,
    { ...BASE_ENV, HOME: sandbox.paths.home, TMPDIR: sandbox.paths.tmp, ...env },
    workingDirectory === undefined ? {} : { workingDirectory },
    (c) => out.push(c),
    (c) => err.push(c),
  );
  const stdout = Buffer.concat(out);
  return {
    ...result,
    stdout: stdout.toString("utf8"),
    stderr: Buffer.concat(err).toString("utf8"),
    stdoutBytes: stdout.length,
  };
}

/** Host pids of every process whose environment carries `marker` (works across pid namespaces). */
async function pidsWithEnv(marker: string): Promise<number[]> {
  const pids: number[] = [];
  for (const entry of await readdir("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const environ = await readFile(`/proc/${entry}/environ`).catch(() => null);
    if (environ?.toString("utf8").split("\0").includes(marker)) pids.push(Number(entry));
  }
  return pids;
}

/**
 * kill(pid, 0) throws once the process is gone. An orphan killed outside a pid namespace is
 * re-parented to the host's init; where that init does not reap (some container/VM inits), a
 * dead zombie entry lingers, which is not a running process.
 */
async function isGone(pid: number): Promise<boolean> {
  try {
    process.kill(pid, 0);
  } catch {
    return true;
  }
  const stat = await readFile(`/proc/${pid}/stat`, "utf8").catch(() => "");
  return stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z");
}

async function waitUntilGone(pids: number[], timeoutMs = 3_000): Promise<number[]> {
  const deadline = Date.now() + timeoutMs;
  let alive = pids;
  while (alive.length > 0 && Date.now() < deadline) {
    const checks = await Promise.all(alive.map(async (p) => ((await isGone(p)) ? null : p)));
    alive = checks.filter((p): p is number => p !== null);
    if (alive.length > 0) await new Promise((r) => setTimeout(r, 50));
  }
  return alive;
}

const exists = (p: string) =>
  access(p).then(
    () => true,
    () => false,
  );

describe.each(["auto", "off"] as const)("process driver (namespaces: %s)", (namespaces) => {
  let workDir: string;
  let driver: ProcessDriver;
  const newSandbox = () => driver.create({ attemptId: `att-${randomUUID()}`, image: null });

  beforeAll(async () => {
    workDir = await mkdtemp(path.join(os.tmpdir(), "kiln-agent-test-"));
    driver = await createProcessDriver({ workDir, namespaces });
  });
  afterAll(async () => {
    await rm(workDir, { recursive: true, force: true });
  });

  it("runs steps in order, in the workspace, with exactly the given env", async () => {
    const sb = await newSandbox();
    try {
      const first = await run(sb, 'echo one > order.txt; pwd; echo "$GREETING"; echo "$HOME|$TMPDIR"', {
        GREETING: "hi there",
      });
      expect(first.exitCode).toBe(0);
      expect(first.stdout).toBe(`${sb.paths.workspace}\nhi there\n${sb.paths.home}|${sb.paths.tmp}\n`);
      const second = await run(sb, "cat order.txt; echo two >> order.txt; mkdir -p sub/dir");
      expect(second.stdout).toBe("one\n");
      const third = await run(sb, "cat ../../order.txt; pwd", {}, "sub/dir");
      expect(third.stdout).toBe(`one\ntwo\n${path.join(sb.paths.workspace, "sub/dir")}\n`);
      await expect(run(sb, "true", {}, "../..")).rejects.toThrow(/outside the workspace/);
    } finally {
      await sb.destroy();
    }
  });

  it("reports exit codes and delivers stdout and stderr intact", async () => {
    const sb = await newSandbox();
    try {
      const r = await run(sb, "echo out; echo err >&2; printf 'no newline'; exit 3");
      expect(r).toMatchObject({ exitCode: 3, signal: null, stdout: "out\nno newline", stderr: "err\n" });
      expect((await run(sb, "true")).exitCode).toBe(0);
    } finally {
      await sb.destroy();
    }
  });

  it("drains 5 MB of stdout (and 1 MB of stderr at the same time) without hanging", { timeout: 30_000 }, async () => {
    const sb = await newSandbox();
    try {
      const r = await run(
        sb,
        "head -c 1048576 /dev/zero | tr '\\0' e >&2 & head -c 5242880 /dev/zero | tr '\\0' x; wait",
      );
      expect(r.exitCode).toBe(0);
      expect(r.stdoutBytes).toBe(5 * 1024 * 1024);
      expect(/^x+$/.test(r.stdout)).toBe(true);
      expect(r.stderr.length).toBe(1024 * 1024);
    } finally {
      await sb.destroy();
    }
  });

  it("reports a step killed from outside by its signal", async () => {
    const sb = await newSandbox();
    try {
      const pending = run(sb, "echo started; sleep 30");
      await new Promise((r) => setTimeout(r, 300));
      sb.kill("SIGKILL");
      const r = await pending;
      expect(r.exitCode).toBeNull();
      expect(r.signal).toBe("SIGKILL");
    } finally {
      await sb.destroy();
    }
  });

  it("does not let a job's files reach the next sandbox", async () => {
    const first = await newSandbox();
    const firstRoot = path.dirname(first.paths.workspace);
    await run(first, 'echo s1 > secret.txt; echo s2 > "$HOME/.secret"; echo s3 > "$TMPDIR/secret"');
    expect(await exists(path.join(first.paths.workspace, "secret.txt"))).toBe(true);
    await first.destroy();
    expect(await exists(firstRoot)).toBe(false);

    const second = await newSandbox();
    try {
      const listing = await run(second, 'ls -A . "$HOME" "$TMPDIR" | grep -v ":$" | grep -v "^$" || true');
      expect(listing.stdout).toBe("");
      const probe = await run(
        second,
        `cat "${first.paths.workspace}/secret.txt" "${first.paths.home}/.secret" "${first.paths.tmp}/secret"`,
      );
      expect(probe.exitCode).not.toBe(0);
      expect(probe.stdout).not.toMatch(/s1|s2|s3/);
    } finally {
      await second.destroy();
    }
  });

  it("leaves no process behind a finished step or after destroy", async () => {
    const sb = await newSandbox();
    const marker = `KILN_TEST_MARKER=${randomUUID()}`;
    const [key, value] = marker.split("=") as [string, string];
    // Background jobs left by a finished step, one of them escaped into its own session.
    const r = await run(sb, "sleep 1000 & setsid sleep 1000 >/dev/null 2>&1 & echo $!", { [key]: value });
    expect(r.exitCode).toBe(0);
    expect(await waitUntilGone(await pidsWithEnv(marker))).toEqual([]);
    // A running step with background jobs, destroyed underneath.
    const chunks: string[] = [];
    const pending = sb.runStep(
      "sleep 1000 & sleep 1000 & echo ready; wait",
      { ...BASE_ENV, [key]: value },
      {},
      (c) => chunks.push(c.toString()),
      () => undefined,
    );
    while (!chunks.join("").includes("ready")) await new Promise((res) => setTimeout(res, 20));
    const pids = await pidsWithEnv(marker);
    expect(pids.length).toBeGreaterThanOrEqual(3); // the shell and both sleeps (+ unshare)
    await sb.destroy();
    await pending;
    expect(await waitUntilGone(pids)).toEqual([]);
    expect(await exists(path.dirname(sb.paths.workspace))).toBe(false);
  });

  it("does not leak the agent's environment or tokens into a step", async () => {
    process.env.KILN_AGENT_TOKEN = "fake-agent-token-5f1c";
    process.env.KILN_TEST_AGENT_ONLY = "agent-only-value";
    const sb = await newSandbox();
    try {
      const ticket = fakeTicket();
      const r = await run(sb, "env", buildStepEnv(ticket, sb.paths));
      expect(r.exitCode).toBe(0);
      expect(r.stdout).toContain(`KILN_JOB_NAME=${ticket.job.name}`);
      expect(r.stdout).toContain("FROM_WORKFLOW=yes");
      expect(r.stdout).not.toContain("KILN_AGENT_TOKEN");
      expect(r.stdout).not.toContain("fake-agent-token-5f1c");
      expect(r.stdout).not.toContain(ticket.jobToken);
      expect(r.stdout).not.toContain("KILN_TEST_AGENT_ONLY");
    } finally {
      delete process.env.KILN_AGENT_TOKEN;
      delete process.env.KILN_TEST_AGENT_ONLY;
      await sb.destroy();
    }
  });

  it("gives the step no network when namespaces are available, and says so when they are not", async () => {
    const sb = await newSandbox();
    try {
      expect(sb.isolation).toEqual(driver.isolation);
      if (namespaces === "off") expect(driver.isolation.level).toBe("none");
      if (driver.isolation.level === "namespaces") {
        const r = await run(sb, "cat /proc/net/dev; echo pid=$$");
        const interfaces = r.stdout
          .split("\n")
          .slice(2)
          .filter((l) => l.includes(":"))
          .map((l) => l.split(":")[0]!.trim());
        expect(interfaces).toEqual(["lo"]);
        // Own pid namespace: a root agent's view is its init (pid 1, private-view.ts), else the shell is.
        expect(r.stdout).toContain(process.getuid?.() === 0 ? "pid=2" : "pid=1");
      } else {
        expect(driver.isolation.level).toBe("none");
        expect(driver.isolation.detail).not.toBe("");
      }
    } finally {
      await sb.destroy();
    }
  });

  it("refuses unsafe sandbox ids and an attempt directory that still exists", async () => {
    await expect(driver.create({ attemptId: "../escape", image: null })).rejects.toThrow(/unsafe/);
    const id = `att-${randomUUID()}`;
    const sb = await driver.create({ attemptId: id, image: null });
    await expect(driver.create({ attemptId: id, image: null })).rejects.toThrow(/EEXIST/);
    await sb.destroy();
  });

  it("removes leftovers of an earlier run, and only its own directories", async () => {
    const sb = await newSandbox();
    await run(sb, "echo data > file");
    const foreign = await mkdtemp(path.join(workDir, "not-a-sandbox-"));
    expect(await driver.removeLeftovers()).toBeGreaterThanOrEqual(1);
    expect(await exists(sb.paths.workspace)).toBe(false);
    expect(await exists(foreign)).toBe(true);
  });
});

function fakeTicket(): JobTicket {
  return {
    runId: "run-1",
    jobId: "job-1",
    attemptId: "att-1",
    orgId: "org-1",
    epoch: 2,
    jobToken: "fake-job-token-9a7e",
    leaseExpiresAt: new Date().toISOString(),
    leaseTtlMs: 30_000,
    heartbeatMs: 5_000,
    trustClass: "trusted",
    source: { cloneUrl: "https://example.invalid/repo.git", commitSha: "0".repeat(40) },
    job: {
      name: "build",
      index: 0,
      image: null,
      steps: ["env"],
      env: { FROM_WORKFLOW: "yes" },
      timeoutMinutes: 10,
      artifacts: { publish: [], restore: [] },
    },
  };
}
