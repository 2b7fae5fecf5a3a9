import { spawn } from "node:child_process";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { REPO_ROOT as ROOT } from "@kiln/testkit";

// The short soak in CI: `e2e/chaos/run.ts` with 30 runs and a 150 s bound, a fresh seed each time
// (printed, so a failure can be replayed with --seed). It starts its own stack; the long soak and
// its figures are in docs/reliability.md.
const ROWS = [
  "every trigger accepted (retried with the same id/key)",
  "exactly one run per accepted trigger",
  "every run reached a terminal outcome",
  "outcome honest for its workload",
  "no job has two winning attempts",
  "no fenced/losing attempt published anything",
  "bound artifact bytes match their sha256",
  "acknowledged log bytes = stored bytes",
  "outbox has no unpublished committed rows",
];

function runChaos(args: string[]): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ["--import", "tsx", path.join(ROOT, "e2e/chaos/run.ts"), ...args], {
      cwd: ROOT,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    child.stdout.on("data", (b: Buffer) => (out += b.toString("utf8")));
    child.stderr.on("data", (b: Buffer) => (out += b.toString("utf8")));
    child.on("exit", (code) => resolve({ code, out }));
  });
}

describe("chaos soak (short)", () => {
  it("30 runs under process kills, agent freezes and database session cuts: every invariant holds", async () => {
    const seed = String(Math.floor(Math.random() * 2 ** 31));
    const { code, out } = await runChaos(["--runs", "30", "--duration-s", "150", "--seed", seed]);
    const report = out
      .split("\n")
      .filter((l) => !l.startsWith("{"))
      .join("\n");
    expect(code, `chaos --seed ${seed} exited ${code}:\n${report.slice(-6000)}`).toBe(0);
    for (const row of ROWS)
      expect(report, row).toMatch(
        new RegExp(`\\| ${row.replace(/[()/]/g, "\\$&")} +\\| +\\d+ \\| +0 \\| +(PASS|n/a) \\|`),
      );
    expect(report).toMatch(
      /\| infrastructure-failure ratio \(platform_failure jobs \/ jobs\) +\| +\d+ \| +\d+ \| +info \|/,
    );
    expect(report).toMatch(/faults injected: .*kill-/);
    expect(report).toContain("chaos: PASS");
  }, 420_000);
});
