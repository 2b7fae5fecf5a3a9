// Job sizes (issue 30, ADR 0041), one run: what the size's work disk and memory cost at create.
//   1. the work disk: `truncate` + `mkfs.ext4` of a 10 GiB image against `cp --sparse=always` of an
//      empty template (what the drivers do),
//   2. microvm create -> first step start, cold: a 256 MiB guest (the memory every VM had before
//      sizes) against the small size (2 GiB, 10 GiB disk); then a warm-pool hit at small,
//   3. process driver create -> first step start with the size's cgroup and loop-mounted disk,
//      against the same driver with size limits off.
// Usage: npm run bench -- sizes [--cold 2] [--warm 3] [--process 10] [--disk 5]
// CPU-heavy (QEMU under TCG): run it on an otherwise idle machine.
import { execFile } from "node:child_process";
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

const arg = (name: string, fallback: number) =>
  Number(process.argv[process.argv.indexOf(`--${name}`) + 1] || fallback) || fallback;
const counts = { cold: arg("cold", 2), warm: arg("warm", 3), process: arg("process", 10), disk: arg("disk", 5) };
const progress = (m: string) => process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${m}\n`);
const quiet = createLogger({}, () => undefined);
const OLD_MEMORY = { vcpus: 1, memoryMiB: 256, diskMiB: 10240, maxProcesses: 2048 };

function exec(file: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => execFile(file, args, (err) => (err ? reject(err) : resolve())));
}

async function timed(f: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  await f();
  return performance.now() - t0;
}

async function sample(label: string, n: number, f: () => Promise<number>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push(await f());
  progress(`${label}: ${out.map((x) => Math.round(x)).join(" ")}`);
  return out;
}

async function createToFirstStep(driver: SandboxDriver): Promise<number> {
  const t0 = performance.now();
  const sandbox = await driver.create({ attemptId: `bench-${randomUUID()}`, image: null, size: "small" });
  let first = 0;
  try {
    await sandbox.runStep(
      "echo s",
      { PATH: "/usr/local/bin:/usr/bin:/bin" },
      {},
      () => (first ||= performance.now() - t0),
      () => undefined,
    );
  } finally {
    await sandbox.destroy();
  }
  return first;
}

async function diskRows(dir: string): Promise<Array<[string, number[]]>> {
  const template = path.join(dir, "template.img");
  await exec("/sbin/mkfs.ext4", ["-q", "-F", "-O", "^has_journal", "-m", "0", template, "10240M"]);
  const mkfs = await sample("mkfs 10 GiB", counts.disk, async () => {
    const f = path.join(dir, `m-${randomUUID()}.img`);
    const ms = await timed(async () => {
      await exec("/usr/bin/truncate", ["-s", "10G", f]);
      await exec("/sbin/mkfs.ext4", ["-q", "-F", "-O", "^has_journal", "-m", "0", f]);
    });
    await rm(f);
    return ms;
  });
  const copy = await sample("template copy 10 GiB", counts.disk, async () => {
    const f = path.join(dir, `c-${randomUUID()}.img`);
    const ms = await timed(() => exec("/bin/cp", ["--sparse=always", template, f]));
    await rm(f);
    return ms;
  });
  return [
    ["work disk 10 GiB: truncate + mkfs.ext4", mkfs],
    ["work disk 10 GiB: cp --sparse=always of the template", copy],
  ];
}

async function waitForPool(driver: MicrovmDriver): Promise<void> {
  while (driver.stats.poolReady < 1) await new Promise((r) => setTimeout(r, 20));
}

async function microvmRows(workRoot: string): Promise<Array<[string, number[]]>> {
  const assetsDir = path.join(os.tmpdir(), "kiln-microvm-assets");
  const rows: Array<[string, number[]]> = [];
  const old = await createMicrovmDriver({
    workDir: path.join(workRoot, "o"),
    assetsDir,
    warmPoolSize: 0,
    sizes: { small: OLD_MEMORY },
    logger: quiet,
  });
  progress(`microvm: ${old.isolation.detail.slice(0, 60)}`);
  rows.push([
    "microvm cold, 256 MiB guest + 10 GiB disk",
    await sample("cold 256M", counts.cold, () => createToFirstStep(old)),
  ]);
  await old.close();
  const warm = await createMicrovmDriver({
    workDir: path.join(workRoot, "w"),
    assetsDir,
    warmPoolSize: 1,
    accel: old.accel,
    logger: quiet,
  });
  const cold = await coldOnly(workRoot, old.accel);
  rows.push([
    "microvm cold, small (2 GiB + 10 GiB disk)",
    await sample("cold small", counts.cold, () => createToFirstStep(cold)),
  ]);
  rows.push([
    "microvm warm-pool hit, small",
    await sample("warm small", counts.warm, async () => {
      await waitForPool(warm);
      return createToFirstStep(warm);
    }),
  ]);
  rows.push(["  (background snapshot restore, small)", warm.stats.restoreMs]);
  await warm.close();
  return rows;
}

let coldDriver: MicrovmDriver | null = null;
async function coldOnly(workRoot: string, accel: "kvm" | "tcg"): Promise<MicrovmDriver> {
  coldDriver ??= await createMicrovmDriver({
    workDir: path.join(workRoot, "c"),
    assetsDir: path.join(os.tmpdir(), "kiln-microvm-assets"),
    warmPoolSize: 0,
    accel,
    logger: quiet,
  });
  return coldDriver;
}

async function processRows(workRoot: string): Promise<Array<[string, number[]]>> {
  const limited = await createProcessDriver({ workDir: path.join(workRoot, "pl") });
  const plain = await createProcessDriver({ workDir: path.join(workRoot, "pp"), sizeLimits: "off" });
  progress(`process: ${limited.isolation.detail.split("; size limits: ")[1]?.slice(0, 120) ?? "no size limits"}`);
  return [
    ["process, size limits off", await sample("process plain", counts.process, () => createToFirstStep(plain))],
    [
      "process, cgroup + 10 GiB loop disk",
      await sample("process limited", counts.process, () => createToFirstStep(limited)),
    ],
  ];
}

async function main(): Promise<void> {
  const workRoot = await mkdtemp(path.join(os.tmpdir(), "kiln-bench-sizes-"));
  const load = () =>
    os
      .loadavg()
      .map((x) => x.toFixed(1))
      .join(" ");
  const atStart = load();
  try {
    const rows = [...(await diskRows(workRoot)), ...(await processRows(workRoot)), ...(await microvmRows(workRoot))];
    await coldDriver?.close();
    console.log(`\nload average at start ${atStart}, at end ${load()}\n`);
    console.log("| what | n | p50 | p95 |\n| --- | --- | --- | --- |");
    for (const [name, s] of rows)
      console.log(
        `| ${name} | ${s.length} | ${percentile(s, 50).toFixed(1)} ms | ${percentile(s, 95).toFixed(1)} ms |`,
      );
  } finally {
    await rm(workRoot, { recursive: true, force: true });
  }
}

await main();
