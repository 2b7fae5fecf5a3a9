// Picks the SandboxDriver named by KILN_SANDBOX_DRIVER.
import { assertNever } from "@kiln/domain";
import { FatalAgentError } from "../errors.ts";
import { createProcessDriver } from "./process/process-driver.ts";
import type { SandboxDriver } from "./sandbox-driver.ts";

export type { Sandbox, SandboxDriver, SandboxPaths, StepResult } from "./sandbox-driver.ts";

export async function createSandboxDriver(kind: "process" | "microvm", workDir: string): Promise<SandboxDriver> {
  switch (kind) {
    case "process":
      return createProcessDriver({ workDir });
    case "microvm":
      throw new FatalAgentError("microvm driver not available in this build");
    default:
      return assertNever(kind, "sandbox driver");
  }
}
