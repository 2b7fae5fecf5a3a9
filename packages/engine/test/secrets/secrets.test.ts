import { execFileSync, spawnSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { isDomainError, SECRET_WITHHELD_MESSAGE } from "@kiln/domain";
import { describe, expect, it } from "vitest";
import { listAuditEvents } from "../../src/audit/index.ts";
import { completeAttempt } from "../../src/attempts/complete-attempt.ts";
import { claimJob, type JobTicket } from "../../src/dispatch/claim-job.ts";
import {
  deleteSecret,
  deliverSecrets,
  generateKekText,
  KekSource,
  listSecrets,
  readKekFile,
  rotateKek,
  secretEnvelope,
  setSecret,
  targetById,
  targetBySlug,
} from "../../src/secrets/index.ts";
import { def, newSession, seedFrozenRun, seedTenant, TEST_CFG, useTestDb, type Tenant } from "../support.ts";

// Secrets on real PostgreSQL (issue 16, ADR 0025): envelope storage checked by python's
// `cryptography` from the envelope and the KEK alone, KEK rotation, and the broker attacked from
// the hostile side (untrusted runs, undeclared names, ended and superseded attempts, other orgs).
const t = useTestDb();
const dir = mkdtempSync(path.join(tmpdir(), "kiln-kek-"));
const kekFile = path.join(dir, "kek");
writeFileSync(kekFile, generateKekText(), { mode: 0o600 });
const keks = new KekSource(kekFile);
const PY = path.join(import.meta.dirname, "decrypt_envelope.py");
// Debian's python3-cryptography where it is installed, else the python3 on PATH (ADR 0025).
const PYTHON =
  spawnSync("/usr/bin/python3", ["-c", "import cryptography"]).status === 0 ? "/usr/bin/python3" : "python3";

function pyDecrypt(kek: string, envelope: unknown): { ok: boolean; out: string } {
  const r = spawnSync(PYTHON, [PY, kek], { input: JSON.stringify(envelope), encoding: "utf8" });
  return { ok: r.status === 0, out: r.stdout };
}

async function codeOf(p: Promise<unknown>): Promise<string | null> {
  try {
    await p;
    return null;
  } catch (e) {
    return isDomainError(e) ? e.code : String(e);
  }
}

const WORKFLOW = (extra = "") => `version: 1
jobs:
  - name: deploy
    secrets: [DEPLOY_TOKEN, REPO_ONLY, NEVER_SET]
${extra}    steps:
      - echo hi
`;

async function claim(tenant: Tenant, trust: "trusted" | "untrusted", yaml = WORKFLOW()): Promise<JobTicket> {
  await seedFrozenRun(t.db(), tenant, def(yaml), trust);
  const session = await newSession(t.db(), tenant, 100, "host", trust === "untrusted" ? "microvm" : "process");
  const r = await claimJob(t.db(), TEST_CFG, { sessionId: session, claimRequestId: randomUUID() });
  if (r.kind !== "claimed") throw new Error(`no claim: ${JSON.stringify(r)}`);
  return r.ticket;
}

const claimsOf = (tk: JobTicket) => ({ attemptId: tk.attemptId, jobId: tk.jobId, epoch: tk.epoch });

describe("secret storage", () => {
  it("stores only ciphertext, versions every set, lists without values and audits set/delete", async () => {
    const tenant = await seedTenant(t.db());
    const org = await targetById(t.db(), tenant.orgId, null);
    const v1 = await setSecret(t.db(), keks, {
      target: org,
      name: "DEPLOY_TOKEN",
      value: "first-value-1",
      actor: "cli:alice",
    });
    const v2 = await setSecret(t.db(), keks, {
      target: org,
      name: "DEPLOY_TOKEN",
      value: "second-value-2",
      actor: "cli:bob",
    });
    expect([v1.version, v2.version]).toEqual([1, 2]);
    const listed = await listSecrets(t.db(), { orgId: tenant.orgId });
    expect(listed).toEqual([
      expect.objectContaining({ name: "DEPLOY_TOKEN", scope: "org", version: 2, updated_by: "cli:bob" }),
    ]);
    expect(JSON.stringify(listed)).not.toContain("second-value-2");
    const raw = await t.db().$queryRaw<
      { c: Uint8Array }[]
    >`SELECT ciphertext AS c FROM secret WHERE org_id = ${tenant.orgId}::uuid`;
    expect(Buffer.from(raw[0]?.c ?? []).includes(Buffer.from("second-value-2"))).toBe(false);
    await deleteSecret(t.db(), { target: org, name: "DEPLOY_TOKEN", actor: "cli:carol" });
    expect(await listSecrets(t.db(), { orgId: tenant.orgId })).toEqual([]);
    expect(await codeOf(deleteSecret(t.db(), { target: org, name: "DEPLOY_TOKEN", actor: "x" }))).toBe(
      "SECRET.NOT_FOUND",
    );
    // A set after a delete continues the sequence: (name, version) names one value forever.
    expect(
      (await setSecret(t.db(), keks, { target: org, name: "DEPLOY_TOKEN", value: "third", actor: "x" })).version,
    ).toBe(3);
    const audit = await listAuditEvents(t.db(), { orgSlug: tenant.slug, kind: "secret." });
    expect(audit.map((e) => [e.kind, e.actor, e.data.version])).toEqual([
      ["secret.set", "cli:alice", 1],
      ["secret.set", "cli:bob", 2],
      ["secret.delete", "cli:carol", 2],
      ["secret.set", "x", 3],
    ]);
    expect(JSON.stringify(audit)).not.toMatch(/first-value|second-value|third/);
  });

  it("refuses bad names, empty and oversized values, and another org's repo", async () => {
    const tenant = await seedTenant(t.db());
    const other = await seedTenant(t.db());
    const org = await targetById(t.db(), tenant.orgId, null);
    for (const name of ["1ABC", "KILN_TOKEN", "A-B", "x".repeat(101)])
      expect(await codeOf(setSecret(t.db(), keks, { target: org, name, value: "v", actor: "x" })), name).toBe(
        "SECRET.INVALID_NAME",
      );
    expect(await codeOf(setSecret(t.db(), keks, { target: org, name: "A", value: "", actor: "x" }))).toBe(
      "REQUEST.INVALID",
    );
    expect(
      await codeOf(setSecret(t.db(), keks, { target: org, name: "A", value: "x".repeat(49 * 1024), actor: "x" })),
    ).toBe("SECRET.VALUE_TOO_LARGE");
    expect(await codeOf(targetById(t.db(), tenant.orgId, other.repoId))).toBe("REPO.NOT_FOUND");
    expect(await codeOf(targetBySlug(t.db(), `${tenant.slug}/nope`))).toBe("REPO.NOT_FOUND");
    expect((await targetBySlug(t.db(), `${tenant.slug}/app`)).repoId).toBe(tenant.repoId);
    expect((await targetBySlug(t.db(), `${tenant.slug}/${tenant.repoName}`)).repoId).toBe(tenant.repoId);
  });

  it("an envelope decrypts with python's AESGCM and the KEK alone; after rotate-kek with the new KEK only", async () => {
    const tenant = await seedTenant(t.db());
    const repo = await targetById(t.db(), tenant.orgId, tenant.repoId);
    await setSecret(t.db(), keks, { target: repo, name: "NPM_TOKEN", value: "npm_ünïcode-Value 42", actor: "cli:a" });
    const env1 = await secretEnvelope(t.db(), { target: repo, name: "NPM_TOKEN" });
    expect(env1.aad).toBe(`kiln-secret:v1:${tenant.orgId}:repo:${tenant.repoId}:NPM_TOKEN:1`);
    expect(env1.dek_aad).toBe(`kiln-dek:v1:${tenant.orgId}:${env1.kek_id}`);
    expect(JSON.stringify(env1)).not.toContain("npm_");
    expect(pyDecrypt(kekFile, env1)).toEqual({ ok: true, out: "npm_ünïcode-Value 42" });
    // A tampered AAD (another version) does not open: the AAD is really bound.
    expect(pyDecrypt(kekFile, { ...env1, aad: env1.aad.replace(":1", ":2") }).ok).toBe(false);

    const newFile = path.join(dir, `kek-new-${randomUUID()}`);
    writeFileSync(newFile, generateKekText(), { mode: 0o600 });
    const oldKek = keks.current();
    const r = await rotateKek(t.db(), { oldKek, newKek: readKekFile(newFile), actor: "cli:ops" });
    expect(r.old_kek_id).toBe(oldKek.id);
    expect(r.rewrapped).toBeGreaterThanOrEqual(1);
    const env2 = await secretEnvelope(t.db(), { target: repo, name: "NPM_TOKEN" });
    expect(env2.kek_id).toBe(r.new_kek_id);
    expect(env2.ciphertext).toBe(env1.ciphertext);
    expect(pyDecrypt(newFile, env2)).toEqual({ ok: true, out: "npm_ünïcode-Value 42" });
    expect(pyDecrypt(kekFile, env2).ok).toBe(false);
    // The old KEK is disabled: a process still holding it can neither open nor create data keys.
    const stale = new KekSource(kekFile);
    const fresh = await seedTenant(t.db());
    expect(
      await codeOf(
        setSecret(t.db(), stale, {
          target: await targetById(t.db(), fresh.orgId, null),
          name: "A",
          value: "v",
          actor: "x",
        }),
      ),
    ).toBe("SECRET.KEK_MISMATCH");
    expect(await codeOf(setSecret(t.db(), stale, { target: repo, name: "NPM_TOKEN", value: "v2", actor: "x" }))).toBe(
      "SECRET.KEK_UNAVAILABLE",
    );
    // A process that re-reads its KEK file after the new key was installed there carries on.
    writeFileSync(kekFile, readFileText(newFile));
    await new Promise((res) => setTimeout(res, 1_050));
    expect((await setSecret(t.db(), keks, { target: repo, name: "NPM_TOKEN", value: "v2", actor: "x" })).version).toBe(
      2,
    );
    const kekRows = await t.db().$queryRaw<
      { id: string; state: string }[]
    >`SELECT id, state FROM secret_kek ORDER BY activated_at`;
    expect(kekRows).toEqual([
      { id: oldKek.id, state: "disabled" },
      { id: r.new_kek_id, state: "active" },
    ]);
    expect(await codeOf(rotateKek(t.db(), { oldKek: readKekFile(newFile), newKek: oldKek, actor: "x" }))).toBe(
      "REQUEST.INVALID",
    );
  });
});

function readFileText(file: string): string {
  return execFileSync("cat", [file], { encoding: "utf8" });
}

describe("the secret broker", () => {
  it("delivers declared secrets to a trusted run (repo over org), audits each before returning, never undeclared ones", async () => {
    const tenant = await seedTenant(t.db());
    const other = await seedTenant(t.db());
    const org = await targetById(t.db(), tenant.orgId, null);
    const repo = await targetById(t.db(), tenant.orgId, tenant.repoId);
    await setSecret(t.db(), keks, { target: org, name: "DEPLOY_TOKEN", value: "org-deploy", actor: "x" });
    await setSecret(t.db(), keks, { target: repo, name: "DEPLOY_TOKEN", value: "repo-deploy", actor: "x" });
    await setSecret(t.db(), keks, { target: org, name: "UNDECLARED", value: "never-delivered", actor: "x" });
    await setSecret(t.db(), keks, {
      target: await targetById(t.db(), other.orgId, null),
      name: "REPO_ONLY",
      value: "other-org",
      actor: "x",
    });
    const tk = await claim(tenant, "trusted");
    const got = await deliverSecrets(t.db(), keks, claimsOf(tk), { epoch: tk.epoch });
    expect(got).toEqual({
      delivered: [{ name: "DEPLOY_TOKEN", version: 1, value: "repo-deploy" }],
      withheld: null,
      missing: ["REPO_ONLY", "NEVER_SET"],
      required: false,
    });
    const reads = await listAuditEvents(t.db(), { orgSlug: tenant.slug, kind: "secret.read" });
    expect(reads).toHaveLength(1);
    expect(reads[0]?.actor).toBe(`agent:${tk.attemptId}`);
    expect(reads[0]?.data).toEqual({
      org_id: tenant.orgId,
      repo_id: tenant.repoId,
      ref: "refs/heads/main",
      run_id: tk.runId,
      job_id: tk.jobId,
      attempt_id: tk.attemptId,
      attempt: tk.epoch,
      trust_class: "trusted",
      scope: `repo:${tenant.repoId}`,
      name: "DEPLOY_TOKEN",
      version: 1,
    });
    expect(await listAuditEvents(t.db(), { orgSlug: other.slug, kind: "secret.read" })).toEqual([]);
  });

  it("withholds everything from an untrusted run with the named reason and writes no audit record", async () => {
    const tenant = await seedTenant(t.db());
    await setSecret(t.db(), keks, {
      target: await targetById(t.db(), tenant.orgId, null),
      name: "DEPLOY_TOKEN",
      value: "v",
      actor: "x",
    });
    const tk = await claim(tenant, "untrusted", WORKFLOW("    secrets_required: true\n"));
    const got = await deliverSecrets(t.db(), keks, claimsOf(tk), { epoch: tk.epoch });
    expect(got).toEqual({
      delivered: [],
      withheld: { cause: "SECRET.WITHHELD_UNTRUSTED", message: SECRET_WITHHELD_MESSAGE },
      missing: [],
      required: true,
    });
    expect(await listAuditEvents(t.db(), { orgSlug: tenant.slug, kind: "secret.read" })).toEqual([]);
  });

  it("refuses an ended attempt, a superseded epoch and a body naming another epoch, with no record", async () => {
    const tenant = await seedTenant(t.db());
    await setSecret(t.db(), keks, {
      target: await targetById(t.db(), tenant.orgId, null),
      name: "DEPLOY_TOKEN",
      value: "v",
      actor: "x",
    });
    const tk = await claim(tenant, "trusted");
    expect(await codeOf(deliverSecrets(t.db(), keks, claimsOf(tk), { epoch: tk.epoch + 1 }))).toBe(
      "ATTEMPT.STALE_EPOCH",
    );
    // Another job's attempt id with this job's id: the attempt/job pair is checked in the query.
    expect(
      await codeOf(deliverSecrets(t.db(), keks, { ...claimsOf(tk), attemptId: randomUUID() }, { epoch: tk.epoch })),
    ).toBe("ATTEMPT.STALE_EPOCH");
    // Superseded: the job's current epoch moved on (as a re-dispatch does) while this attempt still says running.
    await t.db().$executeRaw`UPDATE job_run SET current_epoch = current_epoch + 1 WHERE id = ${tk.jobId}::uuid`;
    expect(await codeOf(deliverSecrets(t.db(), keks, claimsOf(tk), { epoch: tk.epoch }))).toBe("ATTEMPT.STALE_EPOCH");
    await t.db().$executeRaw`UPDATE job_run SET current_epoch = current_epoch - 1 WHERE id = ${tk.jobId}::uuid`;
    await completeAttempt(t.db(), TEST_CFG, { ...claimsOf(tk), outcome: "success", sandboxDestroyed: true });
    expect(await codeOf(deliverSecrets(t.db(), keks, claimsOf(tk), { epoch: tk.epoch }))).toBe("ATTEMPT.STALE_EPOCH");
    expect(await listAuditEvents(t.db(), { orgSlug: tenant.slug, kind: "secret.read" })).toEqual([]);
  });

  it("a job that declares nothing gets nothing, even when the org has secrets", async () => {
    const tenant = await seedTenant(t.db());
    await setSecret(t.db(), keks, {
      target: await targetById(t.db(), tenant.orgId, null),
      name: "DEPLOY_TOKEN",
      value: "v",
      actor: "x",
    });
    const tk = await claim(tenant, "trusted", "version: 1\njobs:\n  - name: a\n    steps: [echo]\n");
    expect(await deliverSecrets(t.db(), keks, claimsOf(tk), { epoch: tk.epoch })).toEqual({
      delivered: [],
      withheld: null,
      missing: [],
      required: false,
    });
  });
});
