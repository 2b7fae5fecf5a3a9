// `npm run bench -- org-throughput [--base <git ref>] [--jobs 1024] [--rounds 2]`: one org's claims +
// completions per second with 8 concurrent claimers, this tree (slot rows, ADR 0042) beside an export
// of an older commit (default: the last commit before ADR 0042, the single org_pool_usage counter
// row), in one run: the two measure.ts processes alternate round by round on the same machine.
// The export gets this file's measure.ts and the same installed dependencies (symlinked), its own
// packages and a generated Prisma client; it needs git and this checkout's history.
import { execFileSync, spawnSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { median } from "../lib/stats.ts";

const ROOT = path.resolve(import.meta.dirname, "../..");
const argOf = (name: string, dflt: string) => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? (process.argv[i + 1] ?? dflt) : dflt;
};
// 65a9517: main when ADR 0042 started; its claim and completion update one counter row per org and pool.
const BASE = argOf("--base", "65a951747a69c294279ed72f79506c9b407882ee");
const JOBS = argOf("--jobs", "1024");
const ROUNDS = Number(argOf("--rounds", "2"));

type Summary = Record<"capped" | "uncapped", { perSec: number; claimP50: number; completeP50: number; jobs: number }>;

/** An export of BASE that resolves @kiln/* to its own packages and everything else to ours. */
function exportBase(): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), "kiln-org-base-"));
  execFileSync("sh", ["-c", `git -C "${ROOT}" archive "${BASE}" | tar -x -C "${dir}"`], { stdio: "inherit" });
  mkdirSync(path.join(dir, "node_modules/@kiln"), { recursive: true });
  for (const e of readdirSync(path.join(ROOT, "node_modules"))) {
    if (e === "@kiln" || e === ".package-lock.json") continue;
    symlinkSync(path.join(ROOT, "node_modules", e), path.join(dir, "node_modules", e));
  }
  for (const e of readdirSync(path.join(ROOT, "node_modules/@kiln"))) {
    const target = execFileSync("readlink", [path.join(ROOT, "node_modules/@kiln", e)])
      .toString()
      .trim();
    symlinkSync(target, path.join(dir, "node_modules/@kiln", e));
  }
  // Newer than the export's lockfile, so with-node24.sh does not reinstall.
  cpSync(path.join(ROOT, "node_modules/.package-lock.json"), path.join(dir, "node_modules/.package-lock.json"));
  writeFileSync(path.join(dir, "node_modules/.package-lock.json"), "{}\n", { flag: "a" });
  cpSync(path.join(import.meta.dirname, "measure.ts"), path.join(dir, "bench/org-throughput/measure.ts"));
  return dir;
}

function measure(root: string): Summary {
  const r = spawnSync(
    "sh",
    ["scripts/with-node24.sh", "tsx", "bench/org-throughput/measure.ts", "--jobs", JOBS, "--rounds", "1"],
    { cwd: root, encoding: "utf8", stdio: ["ignore", "pipe", "inherit"], maxBuffer: 1 << 24 },
  );
  const last = r.stdout.trim().split("\n").at(-1) ?? "";
  if (r.status !== 0 || !last.startsWith("{")) throw new Error(`measure.ts in ${root} failed (status ${r.status})`);
  return JSON.parse(last) as Summary;
}

const base = exportBase();
const runs: { before: Summary; after: Summary }[] = [];
try {
  for (let i = 0; i < ROUNDS; i++) {
    const before = measure(base);
    const after = measure(ROOT);
    runs.push({ before, after });
    process.stderr.write(`round ${i}: ${JSON.stringify({ before, after })}\n`);
  }
} finally {
  rmSync(base, { recursive: true, force: true });
}
const f = (x: number) => x.toFixed(1);
const load = os
  .loadavg()
  .map((x) => x.toFixed(1))
  .join(" / ");
// Round by round: the machine's load moves between rounds, and each round's two sides ran minutes apart.
const rows = runs.flatMap((r, i) =>
  (["capped", "uncapped"] as const).map((v) => {
    const [b, a] = [r.before[v], r.after[v]];
    return `| ${i} | ${v} | ${f(b.perSec)} (claim p50 ${f(b.claimP50)} ms, complete p50 ${f(b.completeP50)} ms) | ${f(a.perSec)} (claim p50 ${f(a.claimP50)} ms, complete p50 ${f(a.completeP50)} ms) | ${(a.perSec / b.perSec).toFixed(2)} |`;
  }),
);
const ratio = (v: "capped" | "uncapped") => median(runs.map((r) => r.after[v].perSec / r.before[v].perSec)).toFixed(2);
console.log(`| round | one org, 8 claimers, ${JOBS} jobs | before (${BASE.slice(0, 7)}, counter row): claim+complete/s | after (slot rows): claim+complete/s | after/before |
|---|---|---|---|---|
${rows.join("\n")}

after/before, median over rounds (lower middle when even): capped ${ratio("capped")}, uncapped ${ratio("uncapped")}
load average at the end: ${load}`);
