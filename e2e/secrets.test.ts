import { spawn, spawnSync } from "node:child_process";
import { readdir, readFile, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { gunzipSync } from "node:zlib";
import { sign } from "@octokit/webhooks-methods";
import { createApiToken, generateKekText, platformKey, signJobToken } from "@kiln/engine";
import { s3Env, startS3, type S3Handle } from "@kiln/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Platform } from "./support/platform.ts";

// Issue 16, secrets end to end on the real platform (web, workers, process-driver agent, S3):
// a value set through the CLI reaches a trusted job's step and nothing else; the stored log (raw
// endpoint, the archive in object storage) holds only the mask; an untrusted run gets nothing and
// the named reason, and its secrets_required job ends blocked_by_policy; every delivery has an
// audit record and the refusals none; the plaintext is nowhere in the database; the envelope opens
// with python's AESGCM and the KEK alone, and after rotate-kek with the new KEK only.
const ROOT = path.resolve(import.meta.dirname, "..");
const VALUE = "kiln-e2e-Secret/Value+42=ok";
const B64 = Buffer.from(VALUE).toString("base64");
const PY = path.join(ROOT, "packages/engine/test/secrets/decrypt_envelope.py");
// Debian's python3-cryptography where it is installed, else the python3 on PATH.
const PYTHON =
  spawnSync("/usr/bin/python3", ["-c", "import cryptography"]).status === 0 ? "/usr/bin/python3" : "python3";

const WORKFLOW = `version: 1
jobs:
  - name: deploy
    needs: []
    secrets: [DEPLOY_TOKEN]
    cache:
      kind: directory
      version: v1
      inputs: [lock.txt]
      paths: [deps]
    steps:
      - echo "token=$DEPLOY_TOKEN"
      - printf '%s' "$DEPLOY_TOKEN" | base64; echo "len=\${#DEPLOY_TOKEN}"
      - mkdir -p deps && printf '%s' "$DEPLOY_TOKEN" > deps/leaked.txt
  - name: strict
    needs: []
    secrets: [DEPLOY_TOKEN]
    secrets_required: true
    steps:
      - echo "strict ran with \${#DEPLOY_TOKEN} characters"
`;

let s3: S3Handle;
let dir = "";
let p: Platform;
let tenant: Awaited<ReturnType<Platform["seedTenant"]>>;
let admin = "";

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "kiln-e2e-secrets-"));
  s3 = await startS3({ dataDir: path.join(dir, "s3"), bucket: "kiln" });
  // Fork PRs run on the development pool's process agents here: this suite is about the broker.
  p = new Platform(
    { ...s3Env(s3), KILN_LEASE_TTL_MS: "15000", KILN_HEARTBEAT_MS: "1000", KILN_LOG_ARCHIVE_MS: "300" },
    { untrustedOnProcess: true },
  );
  await p.start();
  tenant = await p.seedTenant("secrets", { ".kiln/workflow.yaml": WORKFLOW, "lock.txt": "v1\n" }, { member: "dev" });
  admin = (await createApiToken(p.db, { orgSlug: "secrets", role: "admin" })).token;
  await p.startAgent("agent-1", tenant.agentToken);
}, 180_000);
afterAll(async () => {
  await p?.stop();
  await s3?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

function kiln(args: string[], stdin?: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ["--import", "tsx", "scripts/kiln.ts", ...args], {
      cwd: ROOT,
      env: { ...process.env, DATABASE_URL: p.dbUrl, KILN_SECRETS_KEK_FILE: p.kekFile },
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("close", (code) => resolve({ code: code ?? -1, stdout, stderr }));
    child.stdin.end(stdin ?? "");
  });
}

async function pyDecrypt(kekFile: string, envelope: string): Promise<{ ok: boolean; out: string }> {
  const child = spawn(PYTHON, [PY, kekFile]);
  let out = "";
  child.stdout.on("data", (d: Buffer) => (out += d.toString()));
  child.stdin.end(envelope);
  const code = await new Promise<number>((r) => child.on("close", (c) => r(c ?? -1)));
  return { ok: code === 0, out };
}

async function rawLog(jobId: string, stream: "stdout" | "stderr"): Promise<string> {
  const r = await fetch(`${p.base}/v1/jobs/${jobId}/logs/raw?stream=${stream}`, {
    headers: { authorization: `Bearer ${tenant.token}` },
  });
  expect(r.status).toBe(200);
  return r.text();
}

async function trigger(key: string): Promise<any> {
  const r = await p.api(
    "POST",
    `/v1/repos/${tenant.repoId}/workflow-runs`,
    tenant.token,
    { workflow_path: ".kiln/workflow.yaml", commit_sha: tenant.git.headSha },
    { "idempotency-key": key },
  );
  expect(r.status).toBe(202);
  return p.waitForRun(r.json.run_id, tenant.token, (x) => x.status === "completed", 120_000);
}

const jobNamed = (runView: any, name: string) => runView.jobs.find((j: any) => j.name === name);

async function audit(kind: string, token = admin): Promise<any[]> {
  const r = await p.api("GET", `/v1/orgs/secrets/audit-events?kind=${encodeURIComponent(kind)}`, token);
  expect(r.status).toBe(200);
  return r.json.events;
}

/** Every file under `root`, gunzipped when it is gzip (archived log segments are). */
async function storedBytes(root: string): Promise<Buffer[]> {
  const out: Buffer[] = [];
  for (const entry of await readdir(root, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue;
    const bytes = await readFile(path.join(entry.parentPath, entry.name));
    out.push(bytes[0] === 0x1f && bytes[1] === 0x8b ? gunzipSync(bytes) : bytes);
  }
  return out;
}

/**
 * Every row of every table as PostgreSQL's text form (bytea as hex): the data a pg_dump holds.
 * Debian's pg_dump is 15 and refuses this PostgreSQL 18 server, so the dump is taken in SQL.
 */
async function dumpDatabase(): Promise<string> {
  const tables = await p.db.$queryRaw<{ t: string }[]>`
    SELECT format('%I.%I', schemaname, tablename) AS t FROM pg_tables
    WHERE schemaname NOT IN ('pg_catalog', 'information_schema')`;
  const parts: string[] = [];
  for (const { t } of tables) {
    const rows = await p.db.$queryRawUnsafe<{ r: string }[]>(`SELECT x::text AS r FROM ${t} x`);
    parts.push(`-- ${t}\n${rows.map((r) => r.r).join("\n")}`);
  }
  return parts.join("\n");
}

describe("secrets", () => {
  let trustedRun: any;

  it("admins set secrets (CLI from stdin, API), list names and versions only; others are refused", async () => {
    const set = await kiln(["secret", "set", "secrets", "DEPLOY_TOKEN", "--json"], `${VALUE}\n`);
    expect(set.code, set.stderr).toBe(0);
    expect(JSON.parse(set.stdout)).toMatchObject({ name: "DEPLOY_TOKEN", scope: "org", version: 1 });
    const put = await p.api("PUT", `/v1/repos/${tenant.repoId}/secrets/OTHER_ONE`, admin, {
      value: "repo-level-value",
    });
    expect(put.status).toBe(200);
    expect(put.json).toMatchObject({ name: "OTHER_ONE", version: 1, updated_by: expect.stringMatching(/^token:/) });
    const list = await p.api("GET", "/v1/orgs/secrets/secrets", admin);
    expect(list.status).toBe(200);
    expect(list.json.secrets).toEqual([
      expect.objectContaining({
        name: "DEPLOY_TOKEN",
        scope: "org",
        version: 1,
        updated_by: expect.stringMatching(/^cli:/),
      }),
    ]);
    expect(JSON.stringify(list.json)).not.toContain(VALUE);
    const repoList = await p.api("GET", `/v1/repos/${tenant.repoId}/secrets`, admin);
    expect(repoList.json.secrets.map((s: any) => s.name)).toEqual(["OTHER_ONE"]);
    // A member's token, another org's admin, and no token at all.
    expect((await p.api("GET", "/v1/orgs/secrets/secrets", tenant.token)).status).toBe(403);
    expect((await p.api("PUT", "/v1/orgs/secrets/secrets/X", tenant.token, { value: "v" })).status).toBe(403);
    const other = await p.seedTenant("secrets-other", { ".kiln/workflow.yaml": WORKFLOW });
    const otherAdmin = (await createApiToken(p.db, { orgSlug: "secrets-other", role: "admin" })).token;
    expect((await p.api("GET", "/v1/orgs/secrets/secrets", otherAdmin)).status).toBe(404);
    expect((await p.api("PUT", `/v1/repos/${tenant.repoId}/secrets/X`, otherAdmin, { value: "v" })).status).toBe(404);
    expect((await p.api("DELETE", "/v1/orgs/secrets/secrets/DEPLOY_TOKEN", otherAdmin)).status).toBe(404);
    expect((await p.api("GET", "/v1/orgs/secrets/audit-events", otherAdmin)).status).toBe(404);
    expect((await p.api("GET", "/v1/orgs/secrets/secrets", null)).status).toBe(401);
    expect(other.repoId).not.toBe(tenant.repoId);
    // The value is write-only: a bad name is refused with its code, not stored.
    const bad = await p.api("PUT", "/v1/orgs/secrets/secrets/KILN_X", admin, { value: "v" });
    expect([bad.status, bad.json.error.code]).toEqual([422, "SECRET.INVALID_NAME"]);
  }, 120_000);

  it("a trusted job gets its secret; the stored log holds only the mask; the cache with it is not saved", async () => {
    trustedRun = await trigger("secrets-trusted");
    const deploy = jobNamed(trustedRun, "deploy");
    const strict = jobNamed(trustedRun, "strict");
    expect([deploy.outcome, strict.outcome], p.logs()).toEqual(["success", "success"]);
    const stdout = await rawLog(deploy.id, "stdout");
    expect(stdout).toContain("token=***\n");
    expect(stdout).toContain(`***\nlen=${VALUE.length}\n`);
    expect(stdout).not.toContain(VALUE);
    expect(stdout).not.toContain(B64);
    expect(await rawLog(strict.id, "stdout")).toContain(`strict ran with ${VALUE.length} characters`);
    const stderr = await rawLog(deploy.id, "stderr");
    expect(stderr).toContain(
      "[kiln] cache write refused: CACHE.CONTAINS_SECRET: the archive contains a secret value of this job",
    );
  }, 180_000);

  it("the archived log in object storage holds the mask and not the value", async () => {
    const deploy = jobNamed(trustedRun, "deploy");
    const deadline = Date.now() + 30_000;
    for (;;) {
      const rows = await p.db.$queryRaw<{ index_key: string | null; journal_bytes: bigint }[]>`
        SELECT index_key, journal_bytes FROM log_attempt WHERE job_id = ${deploy.id}::uuid`;
      if (rows[0]?.index_key && rows[0].journal_bytes === 0n) break;
      if (Date.now() > deadline) throw new Error(`log not archived\n${p.logs()}`);
      await new Promise((r) => setTimeout(r, 250));
    }
    // Read back through the archive (the journal rows are gone now) and straight from the store's files.
    expect(await rawLog(deploy.id, "stdout")).toContain("token=***\n");
    const stored = await storedBytes(path.join(dir, "s3"));
    expect(stored.some((b) => b.includes("token=***"))).toBe(true);
    for (const b of stored) {
      expect(b.includes(VALUE)).toBe(false);
      expect(b.includes(B64)).toBe(false);
    }
  }, 60_000);

  it("each delivery has its audit record; the API filters by kind and since", async () => {
    const reads = await audit("secret.read");
    const jobIds = trustedRun.jobs.map((j: any) => j.id).sort();
    expect(reads.map((e: any) => e.data.job_id).sort()).toEqual(jobIds);
    for (const e of reads)
      expect(e.data).toMatchObject({
        org_id: expect.any(String),
        repo_id: tenant.repoId,
        ref: expect.any(String),
        run_id: trustedRun.id,
        attempt: 1,
        trust_class: "trusted",
        name: "DEPLOY_TOKEN",
        version: 1,
      });
    expect((await audit("secret.")).map((e: any) => e.kind)).toEqual([
      "secret.set",
      "secret.set",
      "secret.read",
      "secret.read",
    ]);
    const future = new Date(Date.now() + 60_000).toISOString();
    const none = await p.api("GET", `/v1/orgs/secrets/audit-events?since=${encodeURIComponent(future)}`, admin);
    expect(none.json.events).toEqual([]);
    // The CLI reads the same trail.
    const cli = await kiln(["audit", "list", "secrets", "--kind", "secret.read", "--json"]);
    expect(cli.code, cli.stderr).toBe(0);
    expect((JSON.parse(cli.stdout) as any[]).map((e) => e.data.job_id).sort()).toEqual(jobIds);
    // Auditors read it too; members do not.
    const auditor = (await createApiToken(p.db, { orgSlug: "secrets", role: "auditor" })).token;
    expect((await audit("secret.read", auditor)).length).toBe(2);
    expect((await p.api("GET", "/v1/orgs/secrets/audit-events", tenant.token)).status).toBe(403);
  }, 30_000);

  it("an untrusted run gets no secret and the named reason; its secrets_required job is blocked_by_policy; no record", async () => {
    const body = JSON.stringify({
      action: "opened",
      number: 42,
      pull_request: {
        head: { sha: tenant.git.headSha, ref: "feature", repo: { full_name: "outsider/app" } },
        base: { repo: { full_name: tenant.repoName } },
        user: { login: "outsider" },
      },
      repository: { full_name: tenant.repoName },
      sender: { login: "outsider" },
    });
    const hook = await fetch(`${p.base}/v1/webhooks/github`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-github-event": "pull_request",
        "x-github-delivery": "secrets-fork-1",
        "x-hub-signature-256": await sign(tenant.secret, body),
      },
      body,
    });
    expect(hook.status).toBe(202);
    const { run_id: runId } = (await hook.json()) as { run_id: string };
    const done = await p.waitForRun(runId, tenant.token, (x) => x.status === "completed", 120_000);
    expect(done.trust_class).toBe("untrusted");
    const deploy = jobNamed(done, "deploy");
    const strict = jobNamed(done, "strict");
    expect(deploy.outcome).toBe("success");
    expect(await rawLog(deploy.id, "stdout")).toContain("token=\n");
    const reason = "[kiln] SECRET.WITHHELD_UNTRUSTED: secrets withheld: untrusted run (fork or non-member)";
    expect(await rawLog(deploy.id, "stderr")).toContain(reason);
    expect(strict).toMatchObject({ outcome: "blocked_by_policy", cause: "SECRET.WITHHELD_UNTRUSTED" });
    expect(await rawLog(strict.id, "stderr")).toContain(reason);
    expect(await rawLog(strict.id, "stdout")).not.toContain("strict ran");
    const reads = await audit("secret.read");
    expect(reads.filter((e: any) => e.data.run_id === runId)).toEqual([]);
    expect(reads).toHaveLength(2);
  }, 180_000);

  it("the broker refuses a finished attempt's token, another job's token and a forged one, recording nothing", async () => {
    const deploy = jobNamed(trustedRun, "deploy");
    const strict = jobNamed(trustedRun, "strict");
    const attempts = await p.db.$queryRaw<{ id: string }[]>`SELECT id FROM attempt WHERE job_id = ${deploy.id}::uuid`;
    const key = await platformKey(p.db);
    const finished = signJobToken(key, { jobId: deploy.id, attemptId: attempts[0]?.id ?? "", epoch: 1 });
    const ask = (jobId: string, token: string, epoch = 1) =>
      p.api("POST", `/v1/agent/jobs/${jobId}/secrets`, token, { epoch });
    const late = await ask(deploy.id, finished);
    expect([late.status, late.json.error?.code]).toEqual([409, "ATTEMPT.STALE_EPOCH"]);
    expect((await ask(deploy.id, finished, 2)).status).toBe(409);
    expect((await ask(strict.id, finished)).status).toBe(403);
    expect((await ask(deploy.id, `${finished.slice(0, -4)}AAAA`)).status).toBe(401);
    expect((await ask(deploy.id, tenant.token)).status).toBe(401);
    expect(JSON.stringify(late.json)).not.toContain(VALUE);
    expect(await audit("secret.read")).toHaveLength(2);
  }, 30_000);

  it("the plaintext is nowhere in the database", async () => {
    const dump = await dumpDatabase();
    expect(dump).toContain("-- public.secret");
    expect(dump.length).toBeGreaterThan(10_000);
    for (const form of [VALUE, B64, Buffer.from(VALUE).toString("hex"), "repo-level-value"])
      expect(dump.includes(form), form).toBe(false);
  }, 60_000);

  it("the envelope opens with AESGCM and the KEK alone; after rotate-kek only with the new one, and jobs still get it", async () => {
    const env1 = await kiln(["secret", "envelope", "secrets", "DEPLOY_TOKEN", "--json"]);
    expect(env1.code, env1.stderr).toBe(0);
    expect(env1.stdout).not.toContain(VALUE);
    expect(await pyDecrypt(p.kekFile, env1.stdout)).toEqual({ ok: true, out: VALUE });
    const oldKek = path.join(dir, "old.kek");
    await writeFile(oldKek, await readFile(p.kekFile), { mode: 0o600 });
    const newKek = path.join(dir, "new.kek");
    await writeFile(newKek, generateKekText(), { mode: 0o600 });
    const rotated = await kiln(["secrets", "rotate-kek", "--new-kek-file", newKek, "--json"]);
    expect(rotated.code, rotated.stderr).toBe(0);
    expect(JSON.parse(rotated.stdout)).toMatchObject({ rewrapped: 1, installed_at: p.kekFile });
    const env2 = await kiln(["secret", "envelope", "secrets", "DEPLOY_TOKEN", "--json"]);
    expect(JSON.parse(env2.stdout).kek_id).toBe(JSON.parse(rotated.stdout).new_kek_id);
    expect(await pyDecrypt(newKek, env2.stdout)).toEqual({ ok: true, out: VALUE });
    expect((await pyDecrypt(oldKek, env2.stdout)).ok).toBe(false);
    // The running web process re-reads the installed KEK file; the next trusted job still gets its value.
    const again = await trigger("secrets-after-rotation");
    const deploy = jobNamed(again, "deploy");
    expect(deploy.outcome, p.logs()).toBe("success");
    expect(await rawLog(deploy.id, "stdout")).toContain(`len=${VALUE.length}`);
  }, 180_000);
});
