// The shared SandboxDriver contract for the microvm driver: real QEMU, real Debian guest kernel.
// Needs qemu-system-x86, linux-image-cloud-amd64, busybox-static and e2fsprogs (.ci/run installs
// them); without them every case fails with MICROVM.MISSING_TOOL naming the package.
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { createLogger } from "@kiln/logger";
import { contractChildArgv } from "../contract-child-argv.ts";
import { describeSandboxContract } from "../sandbox-contract.ts";
import { createMicrovmDriver } from "./microvm-driver.ts";
import { describeWarmPool } from "./warm-pool-cases.ts";
import type { Accel } from "./qemu-command.ts";
import { MICROVM_TEST_SIZES } from "./microvm-test-sizes.ts";

// Content-addressed, so sharing it between runs and files is safe and saves the asset build.
const TEST_ASSETS_DIR = path.join(os.tmpdir(), "kiln-microvm-assets");
const quiet = createLogger({}, () => undefined);
// The KVM probe runs once (in the contract's setup); later drivers reuse its answer.
let probed: Accel | "auto" = "auto";

describeSandboxContract({
  name: "microvm",
  timeoutMs: 120_000,
  // Every VM has the restricted user-mode network (the device model is fixed by the warm-pool
  // snapshot); without an attempt's egress listener its one guestfwd leads nowhere.
  interfaces: {
    names: ["lo", "eth0"],
    reason: "restricted user-net whose only guestfwd is the attempt's egress proxy",
  },
  async setup() {
    const workDir = await mkdtemp(path.join(os.tmpdir(), "kiln-mvm-"));
    // A warm pool of one: most cases get a restored VM, the rest cold-boot (both paths exercised).
    const driver = await createMicrovmDriver({
      workDir,
      assetsDir: TEST_ASSETS_DIR,
      warmPoolSize: 1,
      sizes: MICROVM_TEST_SIZES,
      accel: "auto",
      logger: quiet,
    });
    probed = driver.accel;
    return {
      driver,
      workDir,
      restart: () =>
        createMicrovmDriver({
          workDir,
          assetsDir: TEST_ASSETS_DIR,
          warmPoolSize: 0,
          sizes: MICROVM_TEST_SIZES,
          accel: driver.accel,
          logger: quiet,
        }),
      childAgentArgv: () => contractChildArgv(["microvm", workDir, TEST_ASSETS_DIR, driver.accel]),
      async close() {
        await driver.close();
        await driver.removeLeftovers();
        await rm(workDir, { recursive: true, force: true });
      },
    };
  },
});

describeWarmPool({ assetsDir: TEST_ASSETS_DIR, accel: () => probed, logger: quiet });
