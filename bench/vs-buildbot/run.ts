// `npm run bench -- vs-buildbot`: Kiln beside Debian's Buildbot 3.7 in ONE run, same trivial workload,
// same machine, minutes apart; prints the two ratios (issue 32). Buildbot comes from the peer harness
// (KILN_BUILDBOT_HARNESS, default ../shared/peers/buildbot beside this checkout), copied into a temp
// dir and run there (nothing of Buildbot is in this repository); install it with
// `flock /tmp/apt.lock bash <harness>/install.sh`.
//   latency:    one build at a time, n = 20, trigger -> the step's own clock (`date +%s.%N` inside the
//               step, against the wall clock read just before the trigger request).
//   throughput: a burst of 100 one-step builds; Buildbot 2 workers (max_builds=1 each), Kiln 2 host
//               agents on the process driver with one slot each; first trigger -> last build finished.
// Usage: npm run bench -- vs-buildbot [--latency-n 20] [--burst 100]
import { spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { freePort } from "@kiln/testkit";
import { BenchStack } from "../control-plane/stack.ts";
import { median } from "../lib/stats.ts";
import { startTrivialWorkload } from "../lib/trivial-workload.ts";

const ROOT = path.resolve(import.meta.dirname, "../..");
const argOf = (name: string, dflt: number) => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? Number(process.argv[i + 1]) || dflt : dflt;
};
const LATENCY_N = argOf("--latency-n", 20);
const BURST = argOf("--burst", 100);
const progress = (s: string) => process.stderr.write(`[vs-buildbot] ${s}\n`);

interface Side {
  latencyP50Ms: number;
  latencyN: number;
  perSec: number;
  burst: number;
}

function harnessDir(): string {
  const dir = process.env.KILN_BUILDBOT_HARNESS ?? path.resolve(ROOT, "../shared/peers/buildbot");
  if (!existsSync(path.join(dir, "measure.py")))
    throw new Error(
      `no Buildbot harness at ${dir} (measure.py missing): set KILN_BUILDBOT_HARNESS to the peer harness directory`,
    );
  if (spawnSync("sh", ["-c", "command -v buildbot && command -v buildbot-worker"]).status !== 0)
    throw new Error(`buildbot is not installed: run  flock /tmp/apt.lock bash ${dir}/install.sh`);
  return dir;
}

async function measureBuildbot(): Promise<Side> {
  const work = mkdtempSync(path.join(os.tmpdir(), "kiln-vs-buildbot-"));
  try {
    cpSync(harnessDir(), path.join(work, "harness"), { recursive: true });
    const out = path.join(work, "out");
    const [www, pb] = [await freePort(), await freePort()];
    const r = spawnSync(
      "python3",
      [
        "measure.py",
        ...["--workers", "2", "--runs", "1", "--latency-n", String(LATENCY_N), "--throughput-n", String(BURST)],
        ...["--biglog-n", "0", "--settle", "1", "--www-port", String(www), "--pb-port", String(pb), "--out", out],
      ],
      { cwd: path.join(work, "harness"), stdio: ["ignore", "inherit", "inherit"] },
    );
    if (r.status !== 0) throw new Error(`Buildbot measure.py failed (status ${r.status})`);
    const file = readdirSync(out, { recursive: true }).find((f) => String(f).endsWith("w2-run1.json"));
    if (!file) throw new Error("Buildbot measure.py wrote no w2-run1.json");
    const res = JSON.parse(readFileSync(path.join(out, String(file)), "utf8")) as {
      latency: { force: { rows: { shell: number | null; results: number }[] } };
      throughput: { builds_per_s: number; failed_builds: number };
    };
    const shells = res.latency.force.rows
      .filter((x) => x.results === 0 && x.shell !== null)
      .map((x) => x.shell! * 1000);
    if (shells.length < LATENCY_N) throw new Error(`Buildbot: only ${shells.length} of ${LATENCY_N} timed builds`);
    if (res.throughput.failed_builds) throw new Error(`Buildbot: ${res.throughput.failed_builds} builds failed`);
    return { latencyP50Ms: median(shells), latencyN: shells.length, perSec: res.throughput.builds_per_s, burst: BURST };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

async function measureKiln(): Promise<Side> {
  const stack = new BenchStack();
  await stack.start(await freePort());
  const work = await startTrivialWorkload(stack, { agents: 2 });
  const { trigger, waitDone, stampOf } = work;
  try {
    // Warm-up, as measure.py does (3 builds).
    for (let i = 0; i < 3; i++) await waitDone([await trigger()]);
    const lat: number[] = [];
    for (let i = 0; i < LATENCY_N; i++) {
      const t0 = Date.now();
      const id = await trigger();
      await waitDone([id]);
      lat.push((await stampOf(id)) - t0);
    }
    progress(`Kiln latency p50 ${median(lat).toFixed(0)} ms`);
    const t0 = performance.now();
    const ids = await Promise.all(Array.from({ length: BURST }, () => trigger()));
    await waitDone(ids);
    const perSec = (BURST / (performance.now() - t0)) * 1000;
    progress(`Kiln throughput ${perSec.toFixed(2)} builds/s`);
    return { latencyP50Ms: median(lat), latencyN: lat.length, perSec, burst: BURST };
  } finally {
    await stack.stop();
    await work.stop();
  }
}

progress("Buildbot (2 workers)");
const bb = await measureBuildbot();
progress(`Buildbot latency p50 ${bb.latencyP50Ms.toFixed(0)} ms, throughput ${bb.perSec.toFixed(2)} builds/s`);
progress("Kiln (process driver, 2 agents x 1 slot)");
const kiln = await measureKiln();
const load = os
  .loadavg()
  .map((x) => x.toFixed(1))
  .join(" / ");
console.log(`| trivial one-step builds, one run (${new Date().toISOString()}) | Kiln | Buildbot 3.7 | Kiln / Buildbot |
|---|---|---|---|
| trigger -> step's own clock p50, one at a time (n=${LATENCY_N}) | ${kiln.latencyP50Ms.toFixed(0)} ms | ${bb.latencyP50Ms.toFixed(0)} ms | ${(kiln.latencyP50Ms / bb.latencyP50Ms).toFixed(2)}x |
| throughput, burst of ${BURST}, 2 agents / 2 workers | ${kiln.perSec.toFixed(2)} /s | ${bb.perSec.toFixed(2)} /s | ${(kiln.perSec / bb.perSec).toFixed(2)}x |

load average at the end: ${load}`);
process.stdout.write("", () => process.exit(0));
