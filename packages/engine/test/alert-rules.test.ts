import { execFile } from "node:child_process";
import { cp, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

// The shipped alert rules (deploy/prometheus, docs/adr/0043) under Debian's promtool: syntax
// (`check rules`), the unit tests with firing and silent cases (`test rules`), and proof that the
// unit tests can fail: a copy with a threshold moved is caught.
const run = promisify(execFile);
const DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../deploy/prometheus");
const PROMTOOL = "/usr/bin/promtool";
const TEST_FILES = ["alerts.test.yml", "alerts-weekly.test.yml"];

async function promtool(args: string[], cwd: string): Promise<{ code: number; out: string }> {
  try {
    const r = await run(PROMTOOL, args, { cwd, timeout: 60_000 });
    return { code: 0, out: r.stdout + r.stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === "number" ? e.code : -1, out: `${e.stdout ?? ""}${e.stderr ?? ""}` };
  }
}

let scratch = "";
beforeAll(async () => {
  scratch = await mkdtemp(path.join(tmpdir(), "kiln-alerts-"));
});
afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

describe("deploy/prometheus/alerts.yml", () => {
  it("passes promtool check rules", async () => {
    const r = await promtool(["check", "rules", "alerts.yml"], DIR);
    expect(r.out).toContain("SUCCESS: 13 rules found");
    expect(r.code).toBe(0);
  });

  it("passes its promtool unit tests (firing and silent cases for every alert)", async () => {
    const r = await promtool(["test", "rules", ...TEST_FILES], DIR);
    expect(r.out.match(/SUCCESS/g)?.length).toBe(TEST_FILES.length);
    expect(r.code).toBe(0);
    // Every alert the rules define is exercised by the unit tests, both ways.
    const rules = await readFile(path.join(DIR, "alerts.yml"), "utf8");
    const tests = (await Promise.all(TEST_FILES.map((f) => readFile(path.join(DIR, f), "utf8")))).join("\n");
    const alerts = [...rules.matchAll(/- alert: (\w+)/g)].map((m) => m[1] ?? "");
    expect(alerts.length).toBe(9);
    for (const a of alerts) {
      const blocks = tests.split("alertname: ").filter((b) => b.startsWith(`${a}\n`));
      expect(
        blocks.some((b) => /exp_alerts: \[\]/.test(b)),
        `${a} has a silent case`,
      ).toBe(true);
      expect(
        blocks.some((b) => /exp_alerts:\n\s+- exp_labels/.test(b)),
        `${a} has a firing case`,
      ).toBe(true);
    }
  });

  it("the unit tests fail when a threshold is moved (they can fail)", async () => {
    await cp(path.join(DIR, "alerts.test.yml"), path.join(scratch, "alerts.test.yml"));
    const rules = await readFile(path.join(DIR, "alerts.yml"), "utf8");
    const moved = rules.replace("max(kiln_shred_leaks) > 0", "max(kiln_shred_leaks) > 5");
    expect(moved).not.toBe(rules);
    await writeFile(path.join(scratch, "alerts.yml"), moved);
    const r = await promtool(["test", "rules", "alerts.test.yml"], scratch);
    expect(r.code).not.toBe(0);
    expect(r.out).toContain("KilnShredLeak");
  });
});
