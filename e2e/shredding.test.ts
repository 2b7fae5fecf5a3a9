import { createHash, randomUUID } from "node:crypto";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { PutObjectCommand } from "@aws-sdk/client-s3";
import { encodeLogCursor, shredDueAt } from "@kiln/domain";
import {
  addMember,
  createObjectStore,
  dataKeyForRead,
  destroyDueKeys,
  KekSource,
  logProbes,
  PlatformKeyStore,
  s3LogStore,
  s3ObjectGetter,
  sampleDeletions,
  type SqlPool,
} from "@kiln/engine";
import { s3Env, startS3, type S3Handle } from "@kiln/testkit";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { screenshot, signIn, TestBrowser } from "./support/browser.ts";
import { Platform } from "./support/platform.ts";

// Issue 21 end to end (ADR 0037): the real workers archive a job's log sealed under the org's data
// key of the day; the real web app serves it back in clear; after the destroyer runs at the due
// instant the raw log refuses, the object in the store is ciphertext nothing left opens, the
// sampler finds every path unreadable, and an injected plaintext copy raises the org home's alert.
let s3: S3Handle;
let dir = "";
let p: Platform;
let pool: pg.Pool;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "kiln-e2e-shred-"));
  s3 = await startS3({ dataDir: path.join(dir, "s3"), bucket: "kiln" });
  p = new Platform({
    ...s3Env(s3),
    KILN_SHRED_KEY_DIR: path.join(dir, "shred-keys"),
    KILN_LOG_ARCHIVE_MS: "200",
    KILN_DEV_LOGIN: "1",
    AUTH_SECRET: "e2e-only-session-secret-0123456789abcdef",
  });
  await p.start();
  pool = new pg.Pool({ connectionString: p.dbUrl, max: 2 });
}, 180_000);
afterAll(async () => {
  await pool?.end();
  await p?.stop();
  await s3?.stop();
  await rm(dir, { recursive: true, force: true });
});

const MARKER = "shred-e2e-private-line";
const WORKFLOW = `version: 1
jobs:
  - name: build
    steps: ["env | sort", "for i in $(seq 1 2000); do echo ${MARKER} $i; done"]
`;

async function waitUntil(pred: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await pred()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`condition not met in ${timeoutMs} ms\n${p.logs()}`);
}

describe("crypto-shredding", () => {
  it("seals archived logs, serves them until D + window, then nothing reads them and a leak alerts", async () => {
    const t = await p.seedTenant("shred-org", { ".kiln/workflow.yaml": WORKFLOW }, { member: "shreda" });
    await p.startAgent("agent-shred", t.agentToken);
    const r = await p.api(
      "POST",
      `/v1/repos/${t.repoId}/workflow-runs`,
      t.token,
      { workflow_path: ".kiln/workflow.yaml", commit_sha: t.git.headSha },
      { "idempotency-key": "shred-1" },
    );
    expect(r.status).toBe(202);
    const run = await p.waitForRun(r.json.run_id, t.token, (x) => x.status === "completed", 120_000);
    expect(run.outcome).toBe("success");
    const jobId = run.jobs[0].id as string;
    await waitUntil(async () => {
      const n = await p.db.$queryRaw<{ n: bigint }[]>`
        SELECT count(*) AS n FROM log_attempt a WHERE a.job_id = ${jobId}::uuid AND a.index_key IS NOT NULL`;
      return (n[0]?.n ?? 0n) > 0n;
    }, 60_000);
    const objects = await p.db.$queryRaw<{ object_key: string; key_id: string }[]>`
      SELECT object_key, key_id::text FROM shred_object WHERE org_id = (SELECT id FROM org WHERE slug = 'shred-org')`;
    expect(objects.length).toBeGreaterThan(0);
    const s3c = createObjectStore({
      endpoint: s3.endpoint,
      region: s3.region,
      accessKeyId: s3.accessKeyId,
      secretAccessKey: s3.secretAccessKey,
    });
    const get = s3ObjectGetter(s3c, s3.bucket);
    for (const o of objects) {
      const body = Buffer.from((await get(o.object_key)) ?? []);
      expect(body.subarray(0, 4).toString()).toBe("KLNS");
      expect(body.includes(Buffer.from(MARKER))).toBe(false);
    }
    // The web app opens it (its own key dir and KEK), journal already emptied by the archiver.
    const raw = await fetch(`${p.base}/v1/jobs/${jobId}/logs/raw?stream=stdout`, {
      headers: { authorization: `Bearer ${t.token}` },
    });
    expect(raw.status).toBe(200);
    const rawText = await raw.text();
    expect(rawText).toContain(`${MARKER} 2000`);
    // Hostile side: the sandbox's environment (the step printed it) names neither the key dir nor
    // the KEK, and holds none of the day keys that exist while the job ran.
    expect(rawText).toContain("PATH=");
    expect(rawText).not.toMatch(/KILN_SHRED_KEY_DIR|KILN_SECRETS_KEK|shred-keys/);
    for (const f of await readdir(path.join(dir, "shred-keys")))
      if (f.endsWith(".key"))
        expect(rawText).not.toContain((await readFile(path.join(dir, "shred-keys", f), "utf8")).trim());

    // The due instant comes: the destroyer (the workers' job body) runs with that clock.
    const [k] = await p.db.$queryRaw<
      { due_day: Date }[]
    >`SELECT due_day FROM shred_data_key WHERE id = ${objects[0]?.key_id}::uuid`;
    const due = shredDueAt((k?.due_day as Date).toISOString().slice(0, 10));
    const keys = {
      db: p.db,
      keks: new KekSource(p.kekFile),
      platformKeys: new PlatformKeyStore(path.join(dir, "shred-keys")),
    };
    expect((await destroyDueKeys(keys, due)).dataKeys).toBeGreaterThan(0);
    // The web app's clock is not at the due instant (the test moved only the destroyer's), so what
    // stops it is the key being gone: its cache re-checks a shredded segment's key every 10 s.
    await new Promise((r) => setTimeout(r, 10_500));
    const gone = await fetch(`${p.base}/v1/jobs/${jobId}/logs/raw?stream=stdout`, {
      headers: { authorization: `Bearer ${t.token}` },
    });
    const goneText = await gone.text();
    expect(goneText).not.toContain(MARKER);
    expect(gone.status).toBe(410);
    expect(goneText).toContain("SHRED.KEY_DESTROYED");
    // The SSE stream refuses the same way before it starts (its replay's first read fails), not a
    // 200 that is cut or retried forever; so does a follower resuming from a cursor into the log.
    // The cursor points inside the log (after its first chunk): how many chunks the agent cut
    // depends on its batching, and a cursor past the end has nothing to replay and nothing to refuse.
    const [chunks] = await p.db.$queryRaw<{ next_seq: number }[]>`
      SELECT next_seq FROM log_attempt WHERE job_id = ${jobId}::uuid ORDER BY next_seq DESC LIMIT 1`;
    expect(chunks?.next_seq).toBeGreaterThan(1);
    for (const cursor of [null, encodeLogCursor({ epoch: 1, kind: "chunk", seq: 0 })]) {
      const sse = await fetch(`${p.base}/v1/jobs/${jobId}/logs/events`, {
        headers: {
          authorization: `Bearer ${t.token}`,
          accept: "text/event-stream",
          ...(cursor ? { "last-event-id": cursor } : {}),
        },
      });
      const body = await sse.text();
      expect([cursor, sse.status, sse.headers.get("content-type")]).toEqual([cursor, 410, "application/json"]);
      expect(JSON.parse(body).error).toMatchObject({ code: "SHRED.KEY_DESTROYED", message: expect.any(String) });
      expect(body).not.toContain(MARKER);
    }
    // The dashboard's log view says the log is gone and why, instead of reconnecting forever.
    const viewer = await TestBrowser.launch();
    try {
      const page = await viewer.page();
      await signIn(page, p.base, "shreda", `/orgs/shred-org/runs/${r.json.run_id}/jobs/${jobId}`);
      await page.locator("[data-log-state='gone']").getByText("encryption key was destroyed on 20").waitFor();
      await page.getByText("it can no longer be read").waitFor();
      await screenshot(page, "log-shredded");
    } finally {
      await viewer.close();
    }
    const evidence = await p.api("GET", "/v1/orgs/shred-org/deletion-evidence", t.token);
    // Members may not read the evidence (admins, auditors); the leak list is theirs.
    expect(evidence.status).toBe(403);

    const sample = () =>
      sampleDeletions(
        {
          db: p.db,
          probes: logProbes({
            keys,
            pool: pool as unknown as SqlPool,
            store: s3LogStore(s3c, s3.bucket),
            getObject: get,
            clock: () => due,
          }),
        },
        { roundId: randomUUID(), now: due },
      );
    expect((await sample()).leaks).toBe(0);
    expect((await p.api("GET", "/v1/orgs/shred-org/shred-leaks", t.token)).json).toEqual({ leaks: [] });

    // A plaintext copy left behind at one segment's key: the sampler reads it, the org home alerts.
    await s3c.send(
      new PutObjectCommand({ Bucket: s3.bucket, Key: objects[0]?.object_key, Body: `${MARKER} left in clear` }),
    );
    expect((await sample()).leaks).toBe(1);
    const leaks = await p.api("GET", "/v1/orgs/shred-org/shred-leaks", t.token);
    expect(leaks.status).toBe(200);
    expect(leaks.json.leaks.map((l: { path: string }) => l.path)).toEqual(["object_get"]);
    // Another org's token reads neither list: refused by role (evidence is admins' and auditors')
    // or because the org is matched in the query (ORG.NOT_FOUND), never answered with data.
    const other = await p.seedTenant("shred-other", { ".kiln/workflow.yaml": WORKFLOW });
    const foreignLeaks = await p.api("GET", "/v1/orgs/shred-org/shred-leaks", other.token);
    expect([foreignLeaks.status, foreignLeaks.json.error?.code]).toEqual([404, "ORG.NOT_FOUND"]);
    const foreignEvidence = await p.api("GET", "/v1/orgs/shred-org/deletion-evidence", other.token);
    expect([403, 404]).toContain(foreignEvidence.status);
    expect(foreignEvidence.json.evidence).toBeUndefined();

    const browser = await TestBrowser.launch();
    try {
      const page = await browser.page();
      await signIn(page, p.base, "shreda", "/orgs/shred-org");
      await page.getByTestId("shred-leak-alert").getByText("still readable").waitFor();
      await screenshot(page, "shred-leak-alert");
      // An auditor sees the deletion evidence on the audit page (members see the refusal there).
      await addMember(p.db, { orgSlug: "shred-org", login: "shred-aud", role: "auditor", forgeId: 8_210_001 });
      // A browser of its own: pages of one browser share the member's session cookie.
      const auditor = await TestBrowser.launch();
      try {
        const aud = await auditor.page();
        await signIn(aud, p.base, "shred-aud", "/orgs/shred-org/audit");
        await aud.getByTestId("deletion-evidence-table").getByText("log").first().waitFor();
        await screenshot(aud, "deletion-evidence");
      } finally {
        await auditor.close();
      }
    } finally {
      await browser.close();
    }
  }, 300_000);

  it("a real agent seals an artifact the sandbox never holds the key of; restore and API open it; key destruction ends both", async () => {
    const ART = "sealed-e2e-artifact-line";
    const wf = `version: 1
jobs:
  - name: compile
    steps:
      - "mkdir -p out && for i in $(seq 1 20000); do echo ${ART} $i; done > out/app.txt"
      # Hostile side: everything the job can read of its own process, environment and disk.
      - "env | sort; tr '\\\\0' '\\\\n' < /proc/self/environ; ls -la / .; find / -xdev -type f -path '*shred*' 2>/dev/null | head -50; find / -xdev -type f -name '*kek*' 2>/dev/null | head -50; echo HOSTILE-DONE"
    artifacts: {publish: [{name: app, path: out/app.txt}]}
  - name: check
    steps: ["sha256sum inputs/app.txt", "tail -n 1 inputs/app.txt"]
    artifacts: {restore: [{from_job: compile, name: app, path: inputs/app.txt}]}
`;
    const t = await p.seedTenant("shred-art", { ".kiln/workflow.yaml": wf });
    await p.startAgent("agent-shred-art", t.agentToken);
    const r = await p.api(
      "POST",
      `/v1/repos/${t.repoId}/workflow-runs`,
      t.token,
      { workflow_path: ".kiln/workflow.yaml", commit_sha: t.git.headSha },
      { "idempotency-key": "shred-art-1" },
    );
    expect(r.status).toBe(202);
    const run = await p.waitForRun(r.json.run_id, t.token, (x) => x.status === "completed", 180_000);
    expect(run.outcome).toBe("success");
    const [compile, check] = run.jobs as { id: string }[];
    const [g] = await p.db.$queryRaw<
      { id: string; object_key: string; shred_key_id: string | null; sha256: string; shred_due_at: Date }[]
    >`SELECT g.id::text, g.object_key, g.shred_key_id::text, g.sha256, g.shred_due_at FROM artifact_binding b
      JOIN artifact_generation g ON g.id = b.generation_id WHERE b.job_id = ${compile?.id}::uuid`;
    // Sealed by the agent: the store holds the header and sealed chunks, none of the plaintext.
    expect(g?.shred_key_id).toMatch(/^[0-9a-f-]{36}$/);
    const s3c = createObjectStore({
      endpoint: s3.endpoint,
      region: s3.region,
      accessKeyId: s3.accessKeyId,
      secretAccessKey: s3.secretAccessKey,
    });
    const stored = Buffer.from((await s3ObjectGetter(s3c, s3.bucket)(g?.object_key as string)) ?? []);
    expect(stored.subarray(0, 4).toString()).toBe("KLNS");
    expect(stored.includes(Buffer.from(ART))).toBe(false);
    // The consumer's agent opened it into the workspace: the job saw the plaintext and its digest.
    const logOf = async (jobId: string | undefined) => {
      const res = await fetch(`${p.base}/v1/jobs/${jobId}/logs/raw?stream=stdout`, {
        headers: { authorization: `Bearer ${t.token}` },
      });
      expect(res.status).toBe(200);
      return res.text();
    };
    const checked = await logOf(check?.id);
    expect(checked).toContain(g?.sha256);
    expect(checked).toContain(`${ART} 20000`);
    // The hostile step ran and found neither the data key (in any encoding) nor the key store.
    const keys = {
      db: p.db,
      keks: new KekSource(p.kekFile),
      platformKeys: new PlatformKeyStore(path.join(dir, "shred-keys")),
    };
    const dk = await dataKeyForRead(
      keys,
      (
        await p.db.$queryRaw<{ id: string }[]>`
      SELECT id::text FROM org WHERE slug = 'shred-art'`
      )[0]?.id as string,
      g?.shred_key_id as string,
      new Date(),
    );
    const hostile = await logOf(compile?.id);
    expect(hostile).toContain("HOSTILE-DONE");
    expect(hostile).toContain("PATH=");
    for (const enc of [dk.key.toString("base64"), dk.key.toString("hex"), dk.key.toString("base64url")])
      expect(hostile).not.toContain(enc);
    expect(hostile).not.toMatch(/KILN_SHRED_KEY_DIR|KILN_SECRETS_KEK|shred-keys/);

    // The verifier opens it under its key and checks the plaintext digest: verified, never
    // quarantined for being ciphertext.
    let state = "";
    await waitUntil(async () => {
      state = (await p.api("GET", `/v1/jobs/${compile?.id}/artifacts`, t.token)).json.artifacts?.[0]?.attestation_state;
      return state === "verified" || state === "quarantined";
    }, 90_000);
    expect(state).toBe("verified");

    // The API serves the opened bytes by id and by job and name, with the provenance digest.
    for (const url of [`/v1/artifacts/${g?.id}/download`, `/v1/jobs/${compile?.id}/artifacts/app`]) {
      const res = await fetch(`${p.base}${url}`, {
        headers: { authorization: `Bearer ${t.token}` },
        redirect: "manual",
      });
      expect([url, res.status, res.headers.get("x-kiln-sha256")]).toEqual([url, 200, g?.sha256]);
      const body = Buffer.from(await res.arrayBuffer());
      expect(createHash("sha256").update(body).digest("hex")).toBe(g?.sha256);
    }
    // Another org's token gets nothing.
    const other = await p.seedTenant("shred-art-other", { ".kiln/workflow.yaml": wf });
    expect((await p.api("GET", `/v1/artifacts/${g?.id}/download`, other.token)).status).toBe(404);

    // The key's due instant: destroyed, both API paths answer 410 SHRED.KEY_DESTROYED, no bytes.
    expect((await destroyDueKeys(keys, g?.shred_due_at as Date)).dataKeys).toBeGreaterThan(0);
    for (const url of [`/v1/artifacts/${g?.id}/download`, `/v1/jobs/${compile?.id}/artifacts/app`]) {
      const res = await fetch(`${p.base}${url}`, {
        headers: { authorization: `Bearer ${t.token}` },
        redirect: "manual",
      });
      const text = await res.text();
      expect([url, res.status]).toEqual([url, 410]);
      expect(JSON.parse(text).error.code).toBe("SHRED.KEY_DESTROYED");
      expect(text).not.toContain(ART);
    }
  }, 300_000);
});
