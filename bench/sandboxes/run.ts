// Sandbox benchmarks (issue #3). Part 1: bare sandbox create -> first step start, p50/p95, for
//   1. the process driver (namespaces as probed),
//   2. the microvm driver, cold boot (no warm pool),
//   3. the microvm driver, warm (pool hit: a snapshot restore done in the background),
// each beside the floor measured in the same run: spawning `sh -c true` and waiting for its exit.
// "First step start" is the first byte of the step's output reaching the agent (`echo s`), so it
// includes everything before the user's command runs (for microvm: clock/entropy, workspace push).
// Part 2 (trigger.ts): API trigger -> first step start through web, workers and a host agent, per
// driver (process, microvm warm, microvm cold), in rounds; the median of the rounds' p50 and p95.
// Usage: npm run bench -- sandboxes   (or: tsx bench/sandboxes/run.ts [--cold 5] [--warm 10] [--process 30]
//        [--trigger-rounds 3] [--trigger-jobs 5] [--only bare|trigger] [--drivers process|all])
//        --drivers process skips the microvm rows (a host without QEMU, or the process driver's own cost)
// CPU-heavy (QEMU under TCG): run it on an otherwise idle machine.
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { createLogger } from "@kiln/logger";
import {
  createMicrovmDriver,
  createProcessDriver,
  type MicrovmDriver,
  type SandboxDriver,
} from "@kiln/host-agent/sandboxes";
import { percentile } from "../lib/stats.ts";
import { benchTriggerToFirstStep, triggerTable } from "./trigger.ts";

const arg = (name: string, fallback: number) =>
  Number(process.argv[process.argv.indexOf(`--${name}`) + 1] || fallback) || fallback;
const counts = {
  process: arg("process", 30),
  cold: arg("cold", 5),
  warm: arg("warm", 10),
  floor: arg("floor", 30),
  triggerRounds: arg("trigger-rounds", 3),
  triggerJobs: arg("trigger-jobs", 5),
};
const only = process.argv.includes("--only") ? process.argv[process.argv.indexOf("--only") + 1] : null;
const processOnly =
  process.argv.includes("--drivers") && process.argv[process.argv.indexOf("--drivers") + 1] === "process";
const progress = (m: string) => process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${m}\n`);
const quiet = createLogger({}, () => undefined);
const STEP_ENV = { PATH: "/usr/local/bin:/usr/bin:/bin" };

function spawnFloor(): Promise<number> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn("/bin/sh", ["-c", "true"], { stdio: "ignore" });
    child.once("error", reject);
    child.once("exit", () => resolve(performance.now() - t0));
  });
}

/** create() until the step's first output byte arrives; then the step finishes and the sandbox goes. */
async function createToFirstStep(driver: SandboxDriver): Promise<number> {
  const t0 = performance.now();
  const sandbox = await driver.create({ attemptId: `bench-${randomUUID()}`, image: null });
  let first = 0;
  try {
    await sandbox.runStep(
      "echo s",
      STEP_ENV,
      {},
      () => (first ||= performance.now() - t0),
      () => undefined,
    );
  } finally {
    await sandbox.destroy();
  }
  return first;
}

async function sample(label: string, n: number, f: () => Promise<number>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push(await f());
  progress(`${label}: ${out.map((x) => Math.round(x)).join(" ")}`);
  return out;
}

async function waitForPool(driver: MicrovmDriver): Promise<void> {
  while (driver.stats.poolReady < 1) await new Promise((r) => setTimeout(r, 20));
}

async function main(): Promise<void> {
  if (only !== "trigger") await bare();
  if (only !== "bare") await trigger();
}

async function trigger(): Promise<void> {
  const loadAtStart = os
    .loadavg()
    .map((x) => x.toFixed(1))
    .join(" ");
  const rows = await benchTriggerToFirstStep({
    rounds: counts.triggerRounds,
    perRound: counts.triggerJobs,
    assetsDir: path.join(os.tmpdir(), "kiln-microvm-assets"),
    progress,
    processOnly,
  });
  console.log(
    `\ntrigger -> first step start (API POST -> first byte of \`echo s\` at the agent); load average at start ${loadAtStart}, at end ${os
      .loadavg()
      .map((x) => x.toFixed(1))
      .join(" ")}\n`,
  );
  console.log(triggerTable(rows));
}

async function bare(): Promise<void> {
  const workRoot = await mkdtemp(path.join(os.tmpdir(), "kiln-bench-sb-"));
  const assetsDir = path.join(os.tmpdir(), "kiln-microvm-assets");
  const rows: Array<{ name: string; samples: number[]; floor: number[] }> = [];
  const loadAtStart = os
    .loadavg()
    .map((x) => x.toFixed(1))
    .join(" ");
  try {
    const floor = await sample("floor sh -c true", counts.floor, spawnFloor);
    const proc = await createProcessDriver({ workDir: path.join(workRoot, "p") });
    rows.push({
      name: `process driver (${proc.isolation.level})`,
      samples: await sample("process", counts.process, () => createToFirstStep(proc)),
      floor,
    });
    if (processOnly) return printBare(rows, "process only", loadAtStart);

    const cold = await createMicrovmDriver({
      workDir: path.join(workRoot, "c"),
      assetsDir,
      warmPoolSize: 0,
      accel: "auto",
      logger: quiet,
    });
    progress(`microvm: ${cold.isolation.detail}`);
    rows.push({
      name: "microvm cold boot",
      samples: await sample("microvm cold", counts.cold, () => createToFirstStep(cold)),
      floor: await sample("floor", 10, spawnFloor),
    });
    await cold.close();

    const warm = await createMicrovmDriver({
      workDir: path.join(workRoot, "w"),
      assetsDir,
      warmPoolSize: 1,
      accel: cold.accel,
      logger: quiet,
    });
    const warmSamples = await sample("microvm warm", counts.warm, async () => {
      await waitForPool(warm); // every sample is a pool hit; the refill is not on the clock
      return createToFirstStep(warm);
    });
    rows.push({ name: "microvm warm (pool hit)", samples: warmSamples, floor: await sample("floor", 10, spawnFloor) });
    const { restoreMs, poolHits, poolMisses } = warm.stats;
    await warm.close();
    rows.push({ name: "  (background snapshot restore, spawn -> guest PONG)", samples: restoreMs, floor: [] });

    printBare(rows, `accel: ${cold.isolation.detail}; warm pool hits ${poolHits}, misses ${poolMisses}`, loadAtStart);
  } finally {
    await rm(workRoot, { recursive: true, force: true });
  }
}

function printBare(
  rows: Array<{ name: string; samples: number[]; floor: number[] }>,
  note: string,
  loadAtStart: string,
) {
  console.log(
    `\n${note}; load average at start ${loadAtStart}, at end ${os
      .loadavg()
      .map((x) => x.toFixed(1))
      .join(" ")}\n`,
  );
  console.log("| measurement | n | p50 | p95 | floor p50 (`sh -c true`, same run) |");
  console.log("|---|---|---|---|---|");
  for (const r of rows) {
    const f = r.floor.length ? `${percentile(r.floor, 50).toFixed(1)} ms` : "";
    console.log(
      `| ${r.name} | ${r.samples.length} | ${percentile(r.samples, 50).toFixed(1)} ms | ${percentile(r.samples, 95).toFixed(1)} ms | ${f} |`,
    );
  }
}

await main();
