import { execFile } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { DEFAULT_RETENTION_WINDOWS as W } from "@kiln/domain";
import { describe, expect, it } from "vitest";
import { runRetentionPass } from "../../src/retention/run-retention.ts";
import { useS3 } from "../artifacts/support.ts";
import { seedTenant, useTestDb } from "../support.ts";
import { sealedArtifact, stamp } from "./support.ts";

// `kiln retention ...` as a real process against this file's database: holds, the plan as JSON
// (the worker then evicts exactly what it listed), and the never-lengthen rule.
const t = useTestDb();
const s3 = useS3();
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../..");

function kiln(args: string[]): Promise<{ code: number; out: unknown }> {
  return new Promise((resolve) =>
    execFile(
      process.execPath,
      ["--import", "tsx", "scripts/kiln.ts", ...args, "--json"],
      { cwd: ROOT, env: { ...process.env, DATABASE_URL: t.url(), USER: "ops" } },
      (err, stdout) => resolve({ code: err ? Number(err.code ?? 1) : 0, out: JSON.parse(stdout.trim() || "null") }),
    ),
  );
}

interface Plan {
  evict: { kind: string; id: string; class: string; reason: string }[];
  kept: { id: string; reason: string }[];
}

describe("kiln retention (the CLI)", { timeout: 240_000 }, () => {
  it("holds, plans as JSON what the worker then evicts, and refuses to lengthen a window", async () => {
    const tenant = await seedTenant(t.db());
    const a = await sealedArtifact(t.db(), s3.store(), tenant, "refs/heads/topic");
    const at = (await stamp(t.db(), a.genId)).expiresAt.toISOString();

    expect(await kiln(["retention", "hold", "add", a.genId, "--reason", "incident 42"])).toMatchObject({
      code: 0,
      out: { artifact_id: a.genId, created_by: "cli:ops", reason: "incident 42" },
    });
    const held = (await kiln(["retention", "plan", "--at", at, "--org", tenant.slug])).out as Plan;
    expect(held.kept).toContainEqual(expect.objectContaining({ id: a.genId, reason: "hold" }));
    expect(held.evict).toEqual([]);
    expect((await kiln(["retention", "hold", "remove", a.genId])).code).toBe(0);

    const plan = (await kiln(["retention", "plan", "--at", at, "--org", tenant.slug])).out as Plan;
    expect(plan.evict).toEqual([
      expect.objectContaining({ kind: "artifact", id: a.genId, class: "other", reason: "expired" }),
    ]);
    const pass = await runRetentionPass(t.db(), s3.store(), { at: new Date(at), windows: W, orgId: tenant.orgId });
    expect(pass.evicted).toEqual({ artifact: 1, log: 0, run_metadata: 0 });

    expect(await kiln(["retention", "window", "set", tenant.slug, "artifact", "other", "30"])).toMatchObject({
      code: 1,
      out: { error: { code: "RETENTION.WINDOW_LENGTHENED" } },
    });
  });
});
