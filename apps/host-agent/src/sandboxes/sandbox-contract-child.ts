// A minimal agent for the contract's "agent SIGKILL" case: creates one sandbox with the named
// driver, starts a step that runs forever, prints `READY <sandbox root>` and waits to be killed.
import path from "node:path";
import { createLogger } from "@kiln/logger";
import { createSandboxDriver } from "./index.ts";
import { MICROVM_TEST_SIZES } from "./microvm/microvm-test-sizes.ts";

const [kind, workDir, assetsDir, accel] = process.argv.slice(2) as [
  "process" | "microvm",
  string,
  string,
  "auto" | "kvm" | "tcg",
];
const silent = createLogger({}, () => undefined);
const driver = await createSandboxDriver(kind, {
  workDir,
  logger: silent,
  warmPoolSize: 0,
  microvmAssetsDir: assetsDir,
  microvmAccel: accel,
  ...(kind === "microvm" ? { sizes: MICROVM_TEST_SIZES } : {}),
});
const sandbox = await driver.create({ attemptId: `child-${process.pid}`, image: null });
const root = path.dirname(sandbox.hostWorkspaceDir);
void sandbox.runStep(
  "echo started; sleep 1000 & setsid sleep 1000 >/dev/null 2>&1 & wait",
  { PATH: "/usr/local/bin:/usr/bin:/bin", HOME: sandbox.paths.home },
  {},
  (c) => {
    if (c.toString().includes("started")) process.stdout.write(`READY ${root}\n`);
  },
  () => undefined,
);
setInterval(() => undefined, 60_000);
