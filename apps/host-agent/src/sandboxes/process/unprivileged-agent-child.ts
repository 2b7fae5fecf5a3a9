// A minimal unprivileged agent for hardened-view.test.ts: creates a process driver on the work dir
// it is given (the driver probes the whole view at startup), runs one step, prints its output.
import { randomUUID } from "node:crypto";
import { createProcessDriver } from "./process-driver.ts";

const [workDir, command] = process.argv.slice(2) as [string, string];
const driver = await createProcessDriver({ workDir });
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
