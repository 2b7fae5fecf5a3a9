// Job sizes on the process driver (issue 30, ADR 0041), against the real kernel: a "tiny" small
// size (128 MiB memory, a 32 MiB work disk, 32 processes) keeps each limit quick to reach. Where
// the agent is root and the host has cgroups and loop devices (this machine: cgroup v1), each
// limit ends its step with its named cause; elsewhere the isolation detail must say what is missing.
import { randomUUID } from "node:crypto";
import { mkdir, mkdtemp, readFile, readlink, rename, rm, stat, statfs, symlink, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { SANDBOX_LIMIT_CAUSES } from "@kiln/domain";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { moveInto } from "../../shared/move-into.ts";
import { stepFailureVerdict } from "../../shared/verdict.ts";
import { runCaptured } from "../sandbox-contract-support.ts";
import { type Sandbox, scratchDirOf } from "../sandbox-driver.ts";
import { createProcessDriver, type ProcessDriver } from "./process-driver.ts";

const TIMEOUT_MS = 60_000;
const TINY = { vcpus: 1, memoryMiB: 128, diskMiB: 32, maxProcesses: 32 };
const isRoot = process.getuid?.() === 0;
let workDir = "";
let driver: ProcessDriver;
let sandbox: Sandbox;

beforeAll(async () => {
  workDir = await mkdtemp(path.join(os.tmpdir(), "kiln-proc-size-"));
  driver = await createProcessDriver({ workDir, sizes: { small: TINY } });
  sandbox = await driver.create({ attemptId: randomUUID(), image: null, size: "small" });
}, TIMEOUT_MS);

afterAll(async () => {
  await sandbox?.destroy();
  await rm(workDir, { recursive: true, force: true });
}, TIMEOUT_MS);

describe.runIf(isRoot)("a process sandbox of one size (root agent)", () => {
  it("says which limits it applies, and puts workspace, home and tmp on the size's disk", async () => {
    const detail = driver.isolation.detail;
    expect(detail).toMatch(/per-sandbox cgroup v[12] \(memory, pids, cpu quota\)/);
    expect(detail).toContain("loop-mounted sparse ext4 work disk");
    for (const dir of Object.values(sandbox.paths)) {
      const s = await statfs(dir);
      expect(s.blocks * s.bsize).toBeLessThanOrEqual(32 * 1024 * 1024);
    }
    const r = await runCaptured(sandbox, "cat /proc/self/cgroup");
    expect(r.exitCode, r.err).toBe(0);
    expect(r.out).toMatch(/kiln-/);
  });

  it("stages on the job's own disk, out of the step's sight, and moves staged trees into the bound workspace", async () => {
    // The workspace is a bind mount of the work disk, so a rename from any other mount is EXDEV: every
    // cache and artifact restore failed that way until moveInto copied across (found by the e2e suites).
    const scratch = scratchDirOf(sandbox);
    expect((await stat(scratch)).dev).toBe((await stat(sandbox.hostWorkspaceDir)).dev);
    const staged = await mkdtemp(path.join(scratch, ".kiln-stage-"));
    await mkdir(path.join(staged, "tree/sub"), { recursive: true });
    await writeFile(path.join(staged, "tree/sub/f"), "restored\n");
    await symlink("sub/f", path.join(staged, "tree/link"));
    await expect(rename(path.join(staged, "tree"), path.join(sandbox.hostWorkspaceDir, "tree"))).rejects.toThrow(
      /EXDEV/,
    );
    await moveInto(path.join(staged, "tree"), path.join(sandbox.hostWorkspaceDir, "tree"));
    await writeFile(path.join(staged, "f"), "restored\n");
    await moveInto(path.join(staged, "f"), path.join(sandbox.hostWorkspaceDir, "restored.txt"));
    expect(await readlink(path.join(sandbox.hostWorkspaceDir, "tree/link"))).toBe("sub/f");
    await rm(staged, { recursive: true, force: true });
    const r = await runCaptured(sandbox, "cat restored.txt tree/link; ls -a /");
    expect(r.out).toMatch(/^restored\nrestored\n/);
    expect(r.out).not.toContain(".kiln-stage-");
  });

  it(
    "ends a fork loop at the process limit as sandbox.pids_exhausted",
    async () => {
      const r = await runCaptured(
        sandbox,
        "i=0; while [ $i -lt 500 ]; do sleep 600 & i=$((i + 1)); done; echo spawned all",
      );
      expect(r.exitCode).not.toBe(0);
      expect(r.out).not.toContain("spawned all");
      expect(r.limit).toBe("pids_exhausted");
      expect(stepFailureVerdict(0, "fork", r)?.cause).toBe(SANDBOX_LIMIT_CAUSES.pids_exhausted);
    },
    TIMEOUT_MS,
  );

  it(
    "ends a step that outgrows memory as sandbox.oom",
    async () => {
      const r = await runCaptured(sandbox, "tail /dev/zero");
      expect(r.signal ?? r.exitCode).not.toBe(0);
      expect(r.limit).toBe("oom");
      expect(stepFailureVerdict(1, "tail", r)).toMatchObject({
        outcome: "user_failure",
        cause: SANDBOX_LIMIT_CAUSES.oom,
      });
    },
    TIMEOUT_MS,
  );

  it(
    "ends a step that fills the disk as sandbox.disk_full; a plain failure names no limit",
    async () => {
      const plain = await runCaptured(sandbox, "exit 3");
      expect(plain).toMatchObject({ exitCode: 3, limit: null });
      const r = await runCaptured(sandbox, 'dd if=/dev/zero of="$TMPDIR/fill" bs=1M count=64');
      expect(r.exitCode).not.toBe(0);
      expect(r.err).toMatch(/No space left/);
      expect(r.limit).toBe("disk_full");
      expect(stepFailureVerdict(2, "dd", r)?.cause).toBe(SANDBOX_LIMIT_CAUSES.disk_full);
    },
    TIMEOUT_MS,
  );

  it(
    "leaves no mount, cgroup or image behind at destroy",
    async () => {
      const root = path.dirname(sandbox.hostWorkspaceDir);
      const r = await runCaptured(sandbox, "cat /proc/self/cgroup");
      const inside = /:pids:(\/[^\n]*kiln-[^\n]*)/.exec(r.out)?.[1];
      expect(inside).toBeDefined();
      const cgroupDir = path.join("/sys/fs/cgroup/pids", inside ?? "/nonexistent");
      expect((await statfs(cgroupDir).catch(() => null)) !== null || !r.out.includes(":pids:")).toBe(true);
      await sandbox.destroy();
      const mounts = await readFile("/proc/self/mountinfo", "utf8");
      expect(mounts).not.toContain(root);
      await expect(statfs(cgroupDir)).rejects.toThrow();
      await expect(statfs(root)).rejects.toThrow();
    },
    TIMEOUT_MS,
  );
});

describe.runIf(!isRoot)("a process sandbox of one size (unprivileged agent)", () => {
  it("says the work disk is missing and why", () => {
    expect(driver.isolation.detail).toContain("no work disk (the agent is not root");
  });
});
