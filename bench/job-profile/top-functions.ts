// Summarises V8 CPU profiles (.cpuprofile, from node --cpu-prof): self time by function and by
// file, so a profile of the host agent or the web server can be read without a browser.
// Usage: tsx bench/job-profile/top-functions.ts <dir-or-file> [--top 25]
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}
interface Profile {
  nodes: Node[];
  samples: number[];
  timeDeltas: number[];
}

const target = process.argv[2];
if (!target) throw new Error("usage: top-functions.ts <dir-or-file> [--top 25]");
const topIdx = process.argv.indexOf("--top");
const TOP = topIdx >= 0 ? Number(process.argv[topIdx + 1]) || 25 : 25;
const files = statSync(target).isDirectory()
  ? readdirSync(target)
      .filter((f) => f.endsWith(".cpuprofile"))
      .map((f) => path.join(target, f))
  : [target];

const byFn = new Map<string, number>();
const byFile = new Map<string, number>();
let total = 0;
for (const file of files) {
  const p = JSON.parse(readFileSync(file, "utf8")) as Profile;
  const nodes = new Map(p.nodes.map((n) => [n.id, n]));
  p.samples.forEach((id, i) => {
    const us = p.timeDeltas[i] ?? 0;
    const f = nodes.get(id)?.callFrame;
    if (!f) return;
    const where = f.url.replace(/^file:\/\//, "").replace(/.*\/node_modules\//, "npm:");
    const fn = `${f.functionName || "(anonymous)"} ${where ? `${path.basename(where)}:${f.lineNumber + 1}` : ""}`;
    byFn.set(fn, (byFn.get(fn) ?? 0) + us);
    const bucket = where.startsWith("npm:")
      ? where
          .split("/")
          .slice(0, where.startsWith("npm:@") ? 2 : 1)
          .join("/")
      : where || f.functionName;
    byFile.set(bucket, (byFile.get(bucket) ?? 0) + us);
    total += us;
  });
}
const show = (title: string, m: Map<string, number>) => {
  console.log(`\n${title} (of ${(total / 1000).toFixed(0)} ms sampled in ${files.length} profiles)`);
  for (const [k, us] of [...m].sort((a, b) => b[1] - a[1]).slice(0, TOP))
    console.log(`${((us / total) * 100).toFixed(1).padStart(5)}%  ${(us / 1000).toFixed(0).padStart(7)} ms  ${k}`);
};
show("self time by function", byFn);
show("self time by file or package", byFile);
