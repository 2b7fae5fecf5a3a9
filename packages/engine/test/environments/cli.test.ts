import { execFile } from "node:child_process";
import { mkdtemp, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { authenticateApiToken } from "../../src/identity/authenticate.ts";
import { addMember } from "../../src/tenants/index.ts";
import { useS3 } from "../artifacts/support.ts";
import { useSigner } from "../attestation/support.ts";
import { useJournalPool } from "../logs/support.ts";
import { seedTenant, useTestDb } from "../support.ts";
import { producedArtifact, type Infra } from "./support.ts";

// `kiln env|promote|promotion|token create --member` as a real process against this file's database.
const t = useTestDb();
const s3 = useS3();
const pool = useJournalPool(t.url);
const signer = useSigner();
const x: Infra = { db: t.db, pool, store: s3.store, signer };
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../..");

function kiln(args: string[]): Promise<{ code: number; out: unknown }> {
  return new Promise((resolve) =>
    execFile(
      process.execPath,
      ["--import", "tsx", "scripts/kiln.ts", ...args, "--json"],
      { cwd: ROOT, env: { ...process.env, DATABASE_URL: t.url(), USER: "ops", KILN_PUBLIC_URL: "https://kiln.test" } },
      (err, stdout) => resolve({ code: err ? Number(err.code ?? 1) : 0, out: JSON.parse(stdout.trim() || "null") }),
    ),
  );
}

describe("kiln env|promote|promotion (the CLI)", { timeout: 300_000 }, () => {
  it("creates staging and production, sets a policy, promotes, approves as a member; personal tokens", async () => {
    const ten = await seedTenant(t.db());
    await addMember(t.db(), { orgSlug: ten.slug, login: `${ten.slug}-ann`, role: "admin" });
    const a = await producedArtifact(x, ten);

    expect(await kiln(["env", "create", ten.repoName, "staging"])).toMatchObject({ code: 0, out: { name: "staging" } });
    expect(await kiln(["env", "create", ten.repoName, "production", "--after", "staging"])).toMatchObject({
      code: 0,
      out: { name: "production", after: "staging", production: true },
    });
    const dir = await mkdtemp(path.join(os.tmpdir(), "kiln-policy-"));
    const file = path.join(dir, "policy.json");
    await writeFile(
      file,
      JSON.stringify({ gates: { required_outcomes: {}, provenance: {}, allowed_refs: { patterns: ["main"] } } }),
    );
    expect(await kiln(["env", "policy", ten.repoName, "staging", "--file", file])).toMatchObject({
      code: 0,
      out: { version: 2 },
    });

    // The choices a person picks from (issue 29): the attested artifact, by id, commit and digest.
    const choices = await kiln(["env", "artifacts", ten.repoName, "staging"]);
    expect(choices).toMatchObject({ code: 0, out: [{ artifactId: a.artifactId, name: "app", job: "build" }] });
    expect((await kiln(["env", "artifacts", ten.repoName, "staging", "--limit", "0"])).code).not.toBe(0);

    const staged = await kiln(["promote", ten.repoName, "staging", "--artifact", a.artifactId, "--reason", "cli"]);
    expect(staged).toMatchObject({
      code: 0,
      out: { state: "promoted", decision: { verdict: "allow", policyVersion: 2 } },
    });
    // Production's approvals have separation of duties: the shell alone is nobody, a member must ask (issue 28).
    const nobody = await kiln(["promote", ten.repoName, "production", "--artifact", a.artifactId, "--reason", "cli"]);
    expect(nobody.code).not.toBe(0);
    await addMember(t.db(), { orgSlug: ten.slug, login: `${ten.slug}-bo`, role: "member" });
    const prod = await kiln([
      "promote",
      ten.repoName,
      "production",
      "--artifact",
      a.artifactId,
      "--reason",
      "cli",
      "--as",
      `${ten.slug}-bo`,
    ]);
    expect(prod).toMatchObject({ code: 0, out: { state: "pending", decision: { verdict: "override_required" } } });
    const id = (prod.out as { id: string }).id;
    expect(await kiln(["promotion", "approve", ten.slug, id])).toMatchObject({ code: 2 });
    expect(
      await kiln(["promotion", "approve", ten.slug, id, "--as", `${ten.slug}-ann`, "--comment", "ok"]),
    ).toMatchObject({
      code: 0,
      out: { state: "promoted", approvals: [{ login: `${ten.slug}-ann`, decision: "approve" }] },
    });
    const envs = (await kiln(["env", "list", ten.repoName])).out as {
      name: string;
      pointer: { artifactId: string } | null;
    }[];
    expect(envs.map((e) => [e.name, e.pointer?.artifactId])).toEqual([
      ["staging", a.artifactId],
      ["production", a.artifactId],
    ]);

    const tok = await kiln(["token", "create", ten.slug, "--member", `${ten.slug}-ann`]);
    expect(tok).toMatchObject({ code: 0, out: { member: `${ten.slug}-ann`, role: "admin" } });
    const caller = await authenticateApiToken(t.db(), `Bearer ${(tok.out as { token: string }).token}`);
    expect(caller.login).toBe(`${ten.slug}-ann`);
  });
});
