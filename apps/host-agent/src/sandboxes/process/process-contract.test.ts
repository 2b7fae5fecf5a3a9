// The shared SandboxDriver contract for the process driver (namespaces as probed on this host).
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { contractChildArgv } from "../contract-child-argv.ts";
import { describeSandboxContract } from "../sandbox-contract.ts";
import { createProcessDriver } from "./process-driver.ts";

describeSandboxContract({
  name: "process",
  timeoutMs: 30_000,
  async setup() {
    const workDir = await mkdtemp(path.join(os.tmpdir(), "kiln-contract-process-"));
    return {
      driver: await createProcessDriver({ workDir }),
      workDir,
      restart: () => createProcessDriver({ workDir }),
      childAgentArgv: () => contractChildArgv(["process", workDir, path.join(workDir, "unused-assets"), "tcg"]),
      close: () => rm(workDir, { recursive: true, force: true }),
    };
  },
});
