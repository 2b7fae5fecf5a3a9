// Job sizes as real resources in a real microVM (issue 30, ADR 0041), under TCG when the host has no
// KVM. A "tiny" small size (256 MiB RAM, 64 MiB work disk, 64 processes) keeps the limits quick to
// reach; the VM comes from the warm pool, so the snapshot's kernel and the fresh copy of the work
// disk are proven to agree. Each limit ends its step, names its cause, and leaves the VM usable.
import { randomUUID } from "node:crypto";
import { mkdtemp, rm, stat } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { SANDBOX_LIMIT_CAUSES } from "@kiln/domain";
import { createLogger } from "@kiln/logger";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stepFailureVerdict } from "../../shared/verdict.ts";
import { runCaptured } from "../sandbox-contract-support.ts";
import type { Sandbox } from "../sandbox-driver.ts";
import { createMicrovmDriver, type MicrovmDriver } from "./microvm-driver.ts";

const TIMEOUT_MS = 240_000;
const ASSETS_DIR = path.join(os.tmpdir(), "kiln-microvm-assets");
const TINY = { vcpus: 1, memoryMiB: 256, diskMiB: 64, maxProcesses: 64 };
let workDir = "";
let driver: MicrovmDriver;
let sandbox: Sandbox;

async function poolReady(d: MicrovmDriver, deadlineMs: number): Promise<void> {
  const until = Date.now() + deadlineMs;
  while (d.stats.poolReady < 1) {
    if (Date.now() > until) throw new Error("warm pool never filled");
    await new Promise((r) => setTimeout(r, 200));
  }
}

beforeAll(async () => {
  workDir = await mkdtemp(path.join(os.tmpdir(), "kiln-mvm-size-"));
  driver = await createMicrovmDriver({
    workDir,
    assetsDir: ASSETS_DIR,
    warmPoolSize: 1,
    sizes: { small: TINY },
    accel: "auto",
    logger: createLogger({}, () => undefined),
  });
  await poolReady(driver, TIMEOUT_MS / 2);
  sandbox = await driver.create({ attemptId: randomUUID(), image: null, size: "small" });
}, TIMEOUT_MS);

afterAll(async () => {
  await sandbox?.destroy();
  await driver?.close();
  await rm(workDir, { recursive: true, force: true });
}, TIMEOUT_MS);

describe("a microVM of one size", () => {
  it(
    "has the size's vCPUs and memory, and its work disk under the workspace, /tmp, $HOME and /",
    async () => {
      expect(driver.stats.poolHits).toBe(1);
      const r = await runCaptured(
        sandbox,
        "nproc; sed -n 's/^MemTotal: *\\([0-9]*\\) kB/\\1/p' /proc/meminfo; for d in /workspace /tmp $HOME /; do df -k $d | tail -1; done; echo x > /etc/written-to-root && cat /etc/written-to-root",
      );
      expect(r.exitCode, r.err).toBe(0);
      const [cpus, memKb, ...rest] = r.out.trim().split("\n");
      expect(cpus).toBe("1");
      // The guest kernel keeps some of the 256 MiB for itself.
      expect(Number(memKb)).toBeGreaterThan(180 * 1024);
      expect(Number(memKb)).toBeLessThanOrEqual(256 * 1024);
      const sizesKb = rest.slice(0, 4).map((l) => Number(l.trim().split(/\s+/)[1]));
      for (const kb of sizesKb) {
        expect(kb).toBeGreaterThan(50 * 1024);
        expect(kb).toBeLessThanOrEqual(64 * 1024);
      }
      expect(rest[4]).toBe("x");
      // Sparse on the host: a 64 MiB disk costs the host what the job wrote, not its size.
      const disk = await stat(path.join(path.dirname(sandbox.hostWorkspaceDir), "disk.img"));
      expect(disk.size).toBe(64 * 1024 * 1024);
      expect(disk.blocks * 512).toBeLessThan(disk.size);
    },
    TIMEOUT_MS,
  );

  it(
    "ends a fork loop at the process limit as sandbox.pids_exhausted, leaving nothing running",
    async () => {
      const started = Date.now();
      const r = await runCaptured(
        sandbox,
        "i=0; while [ $i -lt 500 ]; do sleep 600 & i=$((i + 1)); done; echo spawned all",
      );
      expect(r.exitCode).not.toBe(0);
      expect(r.out).not.toContain("spawned all");
      expect(r.limit).toBe("pids_exhausted");
      expect(stepFailureVerdict(0, "fork", r)?.cause).toBe(SANDBOX_LIMIT_CAUSES.pids_exhausted);
      expect(Date.now() - started).toBeLessThan(60_000);
      const after = await runCaptured(sandbox, "ps -o comm | grep -c '^sleep' || true");
      expect(after.out.trim()).toBe("0");
    },
    TIMEOUT_MS,
  );

  it(
    "ends a step that outgrows memory as sandbox.oom",
    async () => {
      const r = await runCaptured(sandbox, "tail /dev/zero");
      expect(r.exitCode).not.toBe(0);
      expect(r.limit).toBe("oom");
      const v = stepFailureVerdict(1, "tail /dev/zero", r);
      expect(v).toMatchObject({ outcome: "user_failure", cause: SANDBOX_LIMIT_CAUSES.oom });
      expect((await runCaptured(sandbox, "echo alive")).out).toBe("alive\n");
    },
    TIMEOUT_MS,
  );

  it(
    "ends a step that fills the disk as sandbox.disk_full (a failure that is not the disk has no limit)",
    async () => {
      const plain = await runCaptured(sandbox, "exit 3");
      expect(plain).toMatchObject({ exitCode: 3, limit: null });
      expect(stepFailureVerdict(0, "exit 3", plain)?.cause).toBe("step.failed");
      const r = await runCaptured(sandbox, "dd if=/dev/zero of=/tmp/fill bs=1M count=100");
      expect(r.exitCode).not.toBe(0);
      expect(r.err).toMatch(/No space left/);
      expect(r.limit).toBe("disk_full");
      expect(stepFailureVerdict(2, "dd", r)).toMatchObject({
        outcome: "user_failure",
        cause: SANDBOX_LIMIT_CAUSES.disk_full,
      });
    },
    TIMEOUT_MS,
  );
});
