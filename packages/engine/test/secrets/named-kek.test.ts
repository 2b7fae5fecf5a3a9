import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { claimJob, type JobTicket } from "../../src/dispatch/claim-job.ts";
import { deliverSecrets, generateKekText, kekIdOf, kekSourceFromEnv, readKekFile } from "../../src/secrets/index.ts";
import { def, newSession, seedFrozenRun, seedTenant, TEST_CFG, useTestDb, type Tenant } from "../support.ts";

// Issue 28: with an operator-named KEK (KILN_SECRETS_KEK_FILE + KILN_SECRETS_KEK_ID), a secret set
// from the CLI was wrapped under the key's derived id while the web process held only the named
// one, and the job that needed it ended platform_failure (SECRET.KEK_UNAVAILABLE). Here the real
// CLI sets secrets and the broker opens them with a KEK source built from the same variables, the
// way apps/web builds its own (kekSourceFromEnv), in both registration orders and across a rotation.
const t = useTestDb();
// A second database: the other registration order (the operator's id first) needs a fresh secret_kek.
const t2 = useTestDb();
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../..");
const dir = mkdtempSync(path.join(tmpdir(), "kiln-named-kek-"));
const kekFile = path.join(dir, "secrets.kek");
writeFileSync(kekFile, generateKekText(), { mode: 0o600 });
const NAMED = { KILN_SECRETS_KEK_FILE: kekFile, KILN_SECRETS_KEK_ID: "bar1" };

function kiln(
  args: string[],
  env: Record<string, string>,
  stdin: string,
  db = t,
): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      ["--import", "tsx", "scripts/kiln.ts", ...args],
      { cwd: ROOT, env: { ...process.env, KILN_SECRETS_KEK_ID: "", ...env, DATABASE_URL: db.url(), USER: "ops" } },
      (err, stdout, stderr) => resolve({ code: err ? Number(err.code ?? 1) : 0, out: `${stdout}${stderr}` }),
    );
    child.stdin?.end(stdin);
  });
}

async function claim(tenant: Tenant, db = t): Promise<JobTicket> {
  const yaml = "version: 1\njobs:\n  - name: deploy\n    secrets: [DEPLOY_TOKEN]\n    steps:\n      - echo hi\n";
  await seedFrozenRun(db.db(), tenant, def(yaml), "trusted");
  const session = await newSession(db.db(), tenant, 100, "host", "process");
  const r = await claimJob(db.db(), TEST_CFG, { sessionId: session, claimRequestId: randomUUID() });
  if (r.kind !== "claimed") throw new Error(`no claim: ${JSON.stringify(r)}`);
  return r.ticket;
}

/** What the web process's broker hands the job, its KEK source built from `env` as apps/web builds it. */
async function delivered(tenant: Tenant, env: Record<string, string>, db = t): Promise<string[]> {
  const tk = await claim(tenant, db);
  const web = kekSourceFromEnv(env);
  const got = await deliverSecrets(
    db.db(),
    web,
    { attemptId: tk.attemptId, jobId: tk.jobId, epoch: tk.epoch },
    { epoch: tk.epoch },
  );
  return got.delivered.map((d) => d.value);
}

const kekRows = () =>
  t.db().$queryRaw<{ id: string; state: string }[]>`SELECT id, state FROM secret_kek ORDER BY activated_at`;

describe("one KEK source for the web app, the workers and the CLI", { timeout: 300_000 }, () => {
  it("a secret the CLI sets under a named KEK is delivered by the broker, in either order and after a rotation", async () => {
    const derived = kekIdOf(readKekFile(kekFile).key);

    // The reported failure: `kiln secret set` in a shell without the operator's id registers the
    // key under its derived id; the web process, which names it bar1, must still open it.
    const a = await seedTenant(t.db());
    expect(
      await kiln(["secret", "set", a.slug, "DEPLOY_TOKEN"], { KILN_SECRETS_KEK_FILE: kekFile }, "v-a\n"),
    ).toMatchObject({ code: 0 });
    expect(await kekRows()).toEqual([{ id: derived, state: "active" }]);
    expect(await delivered(a, NAMED)).toEqual(["v-a"]);

    // The CLI with the operator's id (as the web app has it) writes into the same registered key.
    const b = await seedTenant(t.db());
    expect(await kiln(["secret", "set", b.slug, "DEPLOY_TOKEN"], NAMED, "v-b\n")).toMatchObject({ code: 0 });
    expect(await delivered(b, NAMED)).toEqual(["v-b"]);
    expect(await delivered(b, { KILN_SECRETS_KEK_FILE: kekFile })).toEqual(["v-b"]);

    // A rotation from the named shell; the web process, its variables unchanged, re-reads the file
    // the rotation installed and keeps delivering the old org's value and a new org's.
    const next = path.join(dir, "next.kek");
    writeFileSync(next, generateKekText(), { mode: 0o600 });
    expect(await kiln(["secrets", "rotate-kek", "--new-kek-file", next], NAMED, "")).toMatchObject({ code: 0 });
    const rotated = kekIdOf(readKekFile(next).key);
    expect(await kekRows()).toEqual([
      { id: derived, state: "disabled" },
      { id: rotated, state: "active" },
    ]);
    expect(await delivered(a, NAMED)).toEqual(["v-a"]);
    const c = await seedTenant(t.db());
    expect(await kiln(["secret", "set", c.slug, "DEPLOY_TOKEN"], NAMED, "v-c\n")).toMatchObject({ code: 0 });
    expect(await delivered(c, NAMED)).toEqual(["v-c"]);
  });

  it("a key first registered under the operator's id: the named CLI's secrets are delivered, an unnamed shell is refused", async () => {
    const d = await seedTenant(t2.db());
    expect(await kiln(["secret", "set", d.slug, "DEPLOY_TOKEN"], NAMED, "v-d\n", t2)).toMatchObject({ code: 0 });
    expect(await t2.db().$queryRaw`SELECT id, state FROM secret_kek`).toEqual([{ id: "bar1", state: "active" }]);
    expect(await delivered(d, NAMED, t2)).toEqual(["v-d"]);
    // A shell that lacks the operator's id cannot tell its key is bar1: it is refused when it sets,
    // with the reason, instead of writing a secret no job can receive.
    const e = await seedTenant(t2.db());
    const unnamed = await kiln(
      ["secret", "set", e.slug, "DEPLOY_TOKEN"],
      { KILN_SECRETS_KEK_FILE: kekFile },
      "v\n",
      t2,
    );
    expect(unnamed.code).not.toBe(0);
    expect(unnamed.out).toContain("SECRET.KEK_MISMATCH");
    const again = await kiln(["secret", "set", d.slug, "DEPLOY_TOKEN"], { KILN_SECRETS_KEK_FILE: kekFile }, "v\n", t2);
    expect(again.code).not.toBe(0);
    expect(again.out).toContain("SECRET.KEK_UNAVAILABLE");
    expect(await delivered(d, NAMED, t2)).toEqual(["v-d"]);
  });
});
