// Picks the SandboxDriver named by KILN_SANDBOX_DRIVER.
import { assertNever, type RunnerSize, type SizeResources } from "@kiln/domain";
import type { Logger } from "@kiln/logger";
import { createMicrovmDriver } from "./microvm/microvm-driver.ts";
import { createProcessDriver } from "./process/process-driver.ts";
import type { SandboxDriver } from "./sandbox-driver.ts";

export type { Sandbox, SandboxDriver, SandboxPaths, StepResult } from "./sandbox-driver.ts";
export type { SandboxSpec } from "./sandbox-driver.ts";
export { SandboxLostError, scratchDirOf } from "./sandbox-driver.ts";
export { createProcessDriver, ProcessDriver } from "./process/process-driver.ts";
export { createMicrovmDriver, type MicrovmDriver } from "./microvm/microvm-driver.ts";
export { findForwarderTools, SANDBOX_PROXY_URL } from "./process/egress-forwarder.ts";
// The proxy address a guest sees (the ID token endpoint is advertised on it, docs/adr/0024).
export { GUEST_PROXY_URL } from "./microvm/qemu-command.ts";
export { probeNamespaces } from "./process/namespace-probe.ts";

export interface SandboxDriverConfig {
  workDir: string;
  logger: Logger;
  /** microvm only (the process driver has nothing to pre-boot). */
  warmPoolSize: number;
  /** The sizes that get a warm pool (the sizes this host serves); default small. */
  warmPoolSizes?: readonly RunnerSize[];
  /** Per-size figures replacing the domain's (tests: sizes small enough to boot and fill quickly). */
  sizes?: Partial<Record<RunnerSize, SizeResources>>;
  microvmAssetsDir: string;
  microvmAccel: "auto" | "kvm" | "tcg";
  /** Process driver: start even when steps cannot be isolated (KILN_ALLOW_UNISOLATED, development only). */
  allowUnisolated?: boolean;
}

export async function createSandboxDriver(
  kind: "process" | "microvm",
  cfg: SandboxDriverConfig,
): Promise<SandboxDriver> {
  switch (kind) {
    case "process":
      return createProcessDriver({
        workDir: cfg.workDir,
        allowUnisolated: cfg.allowUnisolated ?? false,
        ...(cfg.sizes ? { sizes: cfg.sizes } : {}),
      });
    case "microvm":
      return createMicrovmDriver({
        workDir: cfg.workDir,
        assetsDir: cfg.microvmAssetsDir,
        warmPoolSize: cfg.warmPoolSize,
        ...(cfg.warmPoolSizes ? { warmPoolSizes: cfg.warmPoolSizes } : {}),
        ...(cfg.sizes ? { sizes: cfg.sizes } : {}),
        accel: cfg.microvmAccel,
        logger: cfg.logger,
      });
    default:
      return assertNever(kind, "sandbox driver");
  }
}
