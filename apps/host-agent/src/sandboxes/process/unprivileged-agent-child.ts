// A minimal unprivileged agent for hardened-view.test.ts: creates a process driver on the work dir
// it is given (the driver probes the whole view at startup), runs one step, prints its output.
// Also fail-closed.test.ts: a third argument "allow-unisolated" is the operator's development flag,
// and the isolation the driver settled on is printed first.
import { randomUUID } from "node:crypto";
import { createProcessDriver } from "./process-driver.ts";

const [workDir, command, flag] = process.argv.slice(2) as [string, string, string | undefined];
const driver = await createProcessDriver({ workDir, allowUnisolated: flag === "allow-unisolated" });
if (flag) process.stdout.write(`isolation=${driver.isolation.level}\n`);
const sandbox = await driver.create({ attemptId: `att-${randomUUID()}`, image: null });
const r = await sandbox.runStep(
  command,
  { PATH: "/usr/bin:/bin", HOME: sandbox.paths.home, TMPDIR: sandbox.paths.tmp },
  {},
  (c) => process.stdout.write(c),
  (c) => process.stdout.write(c),
);
await sandbox.destroy();
process.stdout.write(`exit=${r.exitCode}\n`);
