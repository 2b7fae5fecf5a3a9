// microvm-only cases beside the shared contract: the warm pool hands out never-used VMs restored
// from one snapshot, each with a fresh clock and entropy, and a job with its own root filesystem
// is a pool miss that boots that image.
import { createHash } from "node:crypto";
import { copyFile, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Logger } from "@kiln/logger";
import { runCaptured, waitForNoProcesses } from "../sandbox-contract-support.ts";
import { SandboxLostError } from "../sandbox-driver.ts";
import { findTool } from "./host-tools.ts";
import { createMicrovmDriver, type MicrovmDriver } from "./microvm-driver.ts";
import type { Accel } from "./qemu-command.ts";
import { MICROVM_TEST_SIZES } from "./microvm-test-sizes.ts";

const TIMEOUT_MS = 120_000;
const PROBE = 'date +%s; head -c 32 /dev/urandom | od -An -tx1 | tr -d " \\n"; echo; cat /proc/uptime';

export function describeWarmPool(opts: { assetsDir: string; accel: () => Accel | "auto"; logger: Logger }): void {
  describe("microvm warm pool", () => {
    let workDir: string;
    let driver: MicrovmDriver;

    beforeAll(async () => {
      workDir = await mkdtemp(path.join(os.tmpdir(), "kiln-mvm-pool-"));
      driver = await createMicrovmDriver({
        workDir,
        assetsDir: opts.assetsDir,
        warmPoolSize: 1,
        sizes: MICROVM_TEST_SIZES,
        accel: opts.accel(),
        logger: opts.logger,
      });
    }, TIMEOUT_MS);
    afterAll(async () => {
      await driver?.close();
      await driver?.removeLeftovers();
      await rm(workDir, { recursive: true, force: true });
    }, TIMEOUT_MS);

    const poolReady = async () => {
      const deadline = Date.now() + TIMEOUT_MS / 2;
      while (driver.stats.poolReady < 1 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      expect(driver.stats.poolReady).toBe(1);
    };

    it("hands each job a never-used restored VM with its own clock and entropy", { timeout: TIMEOUT_MS }, async () => {
      await poolReady();
      const first = await driver.create({ attemptId: "pool-a", image: null });
      await poolReady(); // refilled asynchronously, from the same snapshot
      const second = await driver.create({ attemptId: "pool-b", image: null });
      try {
        expect(driver.stats.poolHits).toBe(2);
        expect(path.dirname(first.hostWorkspaceDir)).not.toBe(path.dirname(second.hostWorkspaceDir));
        const [a, b] = [await runCaptured(first, PROBE), await runCaptured(second, PROBE)];
        const now = Date.now() / 1000;
        const [timeA, randA] = a.out.split("\n");
        const [timeB, randB] = b.out.split("\n");
        expect(Math.abs(Number(timeA) - now)).toBeLessThan(60);
        expect(Math.abs(Number(timeB) - now)).toBeLessThan(60);
        expect(randA).toMatch(/^[0-9a-f]{64}$/);
        expect(randA).not.toBe(randB);
      } finally {
        await first.destroy();
        await second.destroy();
      }
      expect(driver.stats.warmStartMs.length).toBe(2);
    });

    it("reports a VM that dies under a step as a lost sandbox, and cleans up after it", {
      timeout: TIMEOUT_MS,
    }, async () => {
      await poolReady();
      const sb = await driver.create({ attemptId: "lost-vm", image: null });
      const root = path.dirname(sb.hostWorkspaceDir);
      let out = "";
      const pending = sb.runStep(
        "echo started; sleep 600",
        { PATH: "/bin" },
        {},
        (c) => (out += c.toString()),
        () => undefined,
      );
      while (!out.includes("started")) await new Promise((r) => setTimeout(r, 20));
      process.kill(Number(await readFile(path.join(root, "qemu.pid"), "utf8")), "SIGKILL"); // from outside the driver
      await expect(pending).rejects.toBeInstanceOf(SandboxLostError);
      await sb.destroy();
      expect(await waitForNoProcesses(root)).toEqual([]);
    });

    it("boots a job's own root filesystem (by digest) as a pool miss", { timeout: TIMEOUT_MS }, async () => {
      const image = await mkdtemp(path.join(os.tmpdir(), "kiln-mvm-image-"));
      const marker = `custom-image-${Date.now()}`;
      const digestHex = createHash("sha256").update(marker).digest("hex");
      try {
        for (const d of ["bin", "etc"]) await mkdir(path.join(image, d));
        await copyFile(await findTool("busybox"), path.join(image, "bin/busybox"));
        for (const applet of ["sh", "cat", "ls"]) await symlink("busybox", path.join(image, "bin", applet));
        await writeFile(path.join(image, "etc/kiln-image"), `${marker}\n`);
        const digest = `sha256:${digestHex}`;
        const misses = driver.stats.poolMisses;
        const sb = await driver.create({
          attemptId: "own-root",
          image: "example/custom",
          rootfs: { dir: image, digest },
        });
        try {
          expect(driver.stats.poolMisses).toBe(misses + 1);
          const r = await runCaptured(sb, "cat /etc/kiln-image; ls /bin");
          expect(r.out).toBe(`${marker}\nbusybox\ncat\nls\nsh\n`);
        } finally {
          await sb.destroy();
        }
        await expect(
          driver.create({ attemptId: "bad-digest", image: null, rootfs: { dir: image, digest: "latest" } }),
        ).rejects.toThrow(/MICROVM.BAD_INPUT/);
      } finally {
        await rm(image, { recursive: true, force: true });
        await rm(path.join(opts.assetsDir, "rootfs", `${digestHex}.ext4`), { force: true });
      }
    });
  });
}
