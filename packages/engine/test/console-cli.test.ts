import { execFile } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { listAuditEvents } from "../src/audit/index.ts";
import { addMember } from "../src/tenants/index.ts";
import { seedTenant, useTestDb } from "./support.ts";

// The CLI's side of the admin console (issue 19): `repo list|remove` and `member list|role|remove`
// run the same use cases as the dashboard, against this file's database, as a real process.
const t = useTestDb();
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");

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

// Each invocation starts tsx (a few seconds on a loaded 2-core machine): hence the long timeout.
describe("kiln repo|member (the CLI)", { timeout: 240_000 }, () => {
  it("lists and disconnects repos, lists, re-roles and removes members; the last admin is refused; audited as cli:ops", async () => {
    const ten = await seedTenant(t.db());
    await addMember(t.db(), { orgSlug: ten.slug, login: `${ten.slug}-root`, role: "admin", forgeId: 5_500_001 });
    await addMember(t.db(), { orgSlug: ten.slug, login: `${ten.slug}-bob`, role: "member", forgeId: 5_500_002 });

    const list = await kiln(["repo", "list", ten.slug]);
    expect(list).toMatchObject({
      code: 0,
      out: [{ fullName: ten.repoName, disconnectedAt: null, lastDelivery: null }],
    });
    expect((await kiln(["repo", "remove", ten.repoName])).code).toBe(0);
    const after = (await kiln(["repo", "list", ten.slug])).out as { disconnectedAt: string | null }[];
    expect(after[0]?.disconnectedAt).toEqual(expect.any(String));

    const members = (await kiln(["member", "list", ten.slug])).out as { login: string; role: string }[];
    expect(members.map((m) => [m.login, m.role])).toEqual([
      [`${ten.slug}-root`, "admin"],
      [`${ten.slug}-bob`, "member"],
    ]);
    const refused = await kiln(["member", "role", ten.slug, `${ten.slug}-root`, "--role", "member"]);
    expect(refused).toMatchObject({ code: 1, out: { error: { code: "MEMBER.LAST_ADMIN" } } });
    expect(await kiln(["member", "role", ten.slug, `${ten.slug}-bob`, "--role", "auditor"])).toMatchObject({
      code: 0,
      out: { login: `${ten.slug}-bob`, role: "auditor" },
    });
    expect((await kiln(["member", "remove", ten.slug, `${ten.slug}-bob`])).code).toBe(0);
    expect(await kiln(["member", "remove", ten.slug, `${ten.slug}-bob`])).toMatchObject({
      code: 1,
      out: { error: { code: "MEMBER.NOT_FOUND" } },
    });
    expect((await kiln(["member", "role", ten.slug])).code).toBe(2);

    const audit = await listAuditEvents(t.db(), { orgSlug: ten.slug });
    expect(audit.filter((e) => e.actor === "cli:ops").map((e) => e.kind)).toEqual([
      "repo.disconnected",
      "member.role_changed",
      "member.removed",
    ]);
  });
});
