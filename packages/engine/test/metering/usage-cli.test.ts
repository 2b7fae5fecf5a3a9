import { execFile } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { usageReport } from "../../src/metering/index.ts";
import { def, newSession, ONE_JOB, seedFrozenRun, seedTenant, useTestDb } from "../support.ts";
import { backdate, claim, complete } from "./support.ts";

// `kiln usage --csv` and `kiln quota set|show` (issue 33) as a real process against this file's
// database: the CSV's seconds sum to the report's totals, and the quota change is what the engine reads.
const t = useTestDb();
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../..");

function kiln(args: string[]): Promise<{ code: number; stdout: string }> {
  return new Promise((resolve) =>
    execFile(
      process.execPath,
      ["--import", "tsx", "scripts/kiln.ts", ...args],
      { cwd: ROOT, env: { ...process.env, DATABASE_URL: t.url(), USER: "ops" } },
      (err, stdout) => resolve({ code: err ? Number(err.code ?? 1) : 0, stdout }),
    ),
  );
}

describe("kiln usage|quota (the CLI)", { timeout: 240_000 }, () => {
  it("prints the org's usage as CSV whose seconds sum to the report's totals; sets and shows the quota", async () => {
    const ten = await seedTenant(t.db());
    const s = await newSession(t.db(), ten);
    for (const [seconds, outcome] of [
      [70, "success"],
      [20, "platform_failure"],
    ] as const) {
      await seedFrozenRun(t.db(), ten, def(ONE_JOB));
      const tk = await claim(t.db(), s);
      await backdate(t.db(), tk.attemptId, seconds);
      await complete(t.db(), tk, outcome);
    }
    const csv = await kiln(["usage", "--org", ten.slug, "--csv"]);
    expect(csv.code).toBe(0);
    const [header, ...lines] = csv.stdout.trim().split("\n");
    const cols = (header ?? "").split(",");
    const minutes = lines.map((l) => l.split(",")).filter((c) => c[0] === "minutes");
    const sum = (name: string) => minutes.reduce((n, c) => n + Number(c[cols.indexOf(name)]), 0);
    const now = new Date();
    const report = await usageReport(t.db(), {
      orgId: ten.orgId,
      from: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)),
      to: new Date(now.getTime() + 60_000),
    });
    expect(report.totals.attempts).toBe(2);
    expect(sum("seconds")).toBe(report.totals.seconds);
    expect(sum("billable_seconds")).toBe(report.totals.billableSeconds);

    const set = await kiln(["quota", "set", ten.slug, "--minutes", "1", "--json"]);
    expect(set.code).toBe(0);
    expect(JSON.parse(set.stdout)).toMatchObject({ quotaMinutes: 1, level: "exhausted" });
    const bad = await kiln(["quota", "set", ten.slug, "--minutes", "lots"]);
    expect(bad.code).toBe(2);
  });
});
