import { createHash, randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { Validator } from "@seriousme/openapi-schema-validator";
import { addMember, createApiToken, revokeApiToken } from "@kiln/engine";
import { s3Env, startS3, type S3Handle } from "@kiln/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import Ajv2020 from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { signIn, TestBrowser } from "./support/browser.ts";
import { forgeIdOf } from "./support/seed-tenant.ts";
import { Platform } from "./support/platform.ts";

// Issue 19's public API, black box against `next start`, the workers, a host agent and s3rver:
// filters and stable cursors on a repo's runs, a run's jobs, an org's repos, the artifact download
// redirect (API token and dashboard session), per-org authorisation attacked with another org's
// token, and the served OpenAPI document checked by an outside validator. Every answer is checked
// against the response schema the served /v1/openapi.json gives for its operation (Ajv, JSON Schema
// 2020-12), so the document is held to what the server really sends.
let s3: S3Handle;
let s3Dir = "";
let p: Platform;
let acme: Awaited<ReturnType<Platform["seedTenant"]>>;
let globex: Awaited<ReturnType<Platform["seedTenant"]>>;
let realRunId = "";
let doc: {
  paths: Record<
    string,
    Record<string, { responses: Record<string, { content?: Record<string, { schema: object }> }> }>
  >;
};
const ajv = addFormats(new Ajv2020({ strict: false }));

/** Parses `body` with the served document's schema for (GET, path template, status), or fails naming the mismatch. */
function documented<T>(template: string, status: number, body: unknown): T {
  const schema = doc.paths[template]?.get?.responses[String(status)]?.content?.["application/json"]?.schema;
  if (!schema) throw new Error(`the document has no ${status} schema for GET ${template}`);
  const validate = ajv.compile(schema);
  if (!validate(body))
    throw new Error(`GET ${template} ${status} differs from its documented schema: ${ajv.errorsText(validate.errors)}`);
  return body as T;
}

type RunPage = { workflow_runs: { id: string }[]; next_cursor: string | null };
type Jobs = { jobs: { id: string; name: string; outcome: string | null; attempts: unknown[]; queue: unknown }[] };
type Artifacts = { artifacts: { id: string; name: string; sha256: string }[] };
type Repos = { repos: { full_name: string; disconnected_at: string | null; forge_credential: { state: string } }[] };

const WORKFLOW = `version: 1
jobs:
  - name: build
    steps: ["printf 'kiln artifact bytes\\n' > out.txt"]
    artifacts:
      publish:
        - {name: report, path: out.txt}
  - name: test
    steps: ["true"]
`;

beforeAll(async () => {
  s3Dir = await mkdtemp(path.join(os.tmpdir(), "kiln-e2e-s3-"));
  s3 = await startS3({ dataDir: s3Dir, bucket: "kiln" });
  p = new Platform({ KILN_DEV_LOGIN: "1", AUTH_SECRET: "e2e-only-session-secret-0123456789abcdef", ...s3Env(s3) });
  await p.start();
  acme = await p.seedTenant("acme", { ".kiln/workflow.yaml": WORKFLOW }, { member: "dev" });
  globex = await p.seedTenant("globex", { ".kiln/workflow.yaml": WORKFLOW }, { member: "eve" });
  await p.startAgent("agent-1", acme.agentToken);
  const r = await p.api(
    "POST",
    `/v1/repos/${acme.repoId}/workflow-runs`,
    acme.token,
    { workflow_path: ".kiln/workflow.yaml", commit_sha: acme.git.headSha },
    { "idempotency-key": "real-run" },
  );
  expect(r.status).toBe(202);
  realRunId = r.json.run_id;
  await p.waitForRun(realRunId, acme.token, (x) => x.status === "completed", 90_000);
  doc = (await p.api("GET", "/v1/openapi.json", null)).json;
}, 240_000);

afterAll(async () => {
  await p?.stop();
  await s3?.stop();
  await rm(s3Dir, { recursive: true, force: true });
});

interface Seeded {
  id: string;
  ref: string;
  trigger: string;
  outcome: string | null;
  createdAt: string;
}

/** Runs with known refs, triggers, outcomes and creation times (fixtures: the filters need exact values). */
async function seedRuns(repoId: string, orgId: string, rows: Omit<Seeded, "id">[]): Promise<Seeded[]> {
  const out: Seeded[] = [];
  for (const r of rows) {
    const done = r.outcome !== null;
    const ins = await p.db.$queryRaw<{ id: string }[]>`
      INSERT INTO workflow_run (org_id, repo_id, status, outcome, trust_class, trigger, ref, commit_sha, workflow_path, inputs, created_at, finished_at)
      VALUES (${orgId}::uuid, ${repoId}::uuid, ${done ? "completed" : "running"}, ${r.outcome}, 'trusted', ${r.trigger}, ${r.ref},
              ${"f".repeat(40)}, '.kiln/workflow.yaml', '{}'::jsonb, ${r.createdAt}::timestamptz, ${done ? r.createdAt : null}::timestamptz)
      RETURNING id`;
    out.push({ ...r, id: ins[0]?.id ?? "" });
  }
  return out;
}

async function orgIdOf(slug: string): Promise<string> {
  const rows = await p.db.$queryRaw<{ id: string }[]>`SELECT id FROM org WHERE slug = ${slug}`;
  return rows[0]?.id ?? "";
}

/** The real run's build job and its one artifact, through the API (checked against the document). */
async function buildArtifact() {
  const jobs = (await p.api("GET", `/v1/workflow-runs/${realRunId}/jobs`, acme.token)).json;
  const job = documented<Jobs>("/v1/workflow-runs/{run_id}/jobs", 200, jobs).jobs.find((j) => j.name === "build");
  const list = (await p.api("GET", `/v1/jobs/${job?.id}/artifacts`, acme.token)).json;
  return { job, artifact: documented<Artifacts>("/v1/jobs/{job_id}/artifacts", 200, list).artifacts[0] };
}

const listUrl = (repoId: string, q: Record<string, string>) =>
  `/v1/repos/${repoId}/workflow-runs?${new URLSearchParams(q).toString()}`;

describe("public API", { timeout: 120_000 }, () => {
  it("filters a repo's runs by branch, event, outcome, status and creation time", async () => {
    const orgId = await orgIdOf("acme");
    const at = (m: number) => new Date(Date.UTC(2026, 0, 1, 12, m)).toISOString();
    const seeded = await seedRuns(acme.repoId, orgId, [
      { ref: "refs/heads/main", trigger: "push", outcome: "success", createdAt: at(1) },
      { ref: "refs/heads/main", trigger: "push", outcome: "user_failure", createdAt: at(2) },
      { ref: "feature-x", trigger: "pull_request", outcome: "success", createdAt: at(3) },
      { ref: "refs/heads/feature-x", trigger: "manual", outcome: null, createdAt: at(4) },
      { ref: "refs/tags/v1", trigger: "push", outcome: "platform_failure", createdAt: at(5) },
    ]);
    const ids = async (q: Record<string, string>) => {
      const r = await p.api(
        "GET",
        listUrl(acme.repoId, { created_after: at(0), created_before: at(30), ...q }),
        acme.token,
      );
      expect(r.status, JSON.stringify(r.json)).toBe(200);
      return documented<RunPage>("/v1/repos/{repo_id}/workflow-runs", 200, r.json).workflow_runs.map((x) => x.id);
    };
    const s = (i: number) => seeded[i]?.id;
    expect(await ids({})).toEqual([s(4), s(3), s(2), s(1), s(0)]);
    // A branch matches pushes and manual runs on refs/heads/<branch> and pull requests from it; never a tag.
    expect(await ids({ branch: "main" })).toEqual([s(1), s(0)]);
    expect(await ids({ branch: "feature-x" })).toEqual([s(3), s(2)]);
    expect(await ids({ event: "push" })).toEqual([s(4), s(1), s(0)]);
    expect(await ids({ outcome: "success" })).toEqual([s(2), s(0)]);
    expect(await ids({ status: "running" })).toEqual([s(3)]);
    expect(await ids({ created_after: at(2), created_before: at(4) })).toEqual([s(2), s(1)]);
    expect(await ids({ event: "push", outcome: "success", branch: "main" })).toEqual([s(0)]);

    const bad: Record<string, string>[] = [
      { event: "cron" },
      { created_after: "yesterday" },
      { per_page: "500" },
      { branch: "refs/heads/main" },
    ];
    for (const q of bad) {
      const r = await p.api("GET", listUrl(acme.repoId, q), acme.token);
      expect([r.status, r.json.error.code], JSON.stringify(q)).toEqual([400, "REQUEST.INVALID"]);
    }
    const cursor = await p.api("GET", listUrl(acme.repoId, { cursor: "bm90LWEtY3Vyc29y" }), acme.token);
    expect([cursor.status, cursor.json.error.code]).toEqual([400, "REQUEST.INVALID"]);
  });

  it("pages with a stable cursor: no run repeated or skipped while new runs arrive", async () => {
    const orgId = await orgIdOf("acme");
    const base = Date.UTC(2025, 5, 1);
    // Seven runs, three sharing one millisecond (the id breaks the tie).
    const seeded = await seedRuns(
      acme.repoId,
      orgId,
      [0, 1, 2, 2, 2, 3, 4].map((m) => ({
        ref: "refs/heads/paging",
        trigger: "push",
        outcome: "success",
        createdAt: new Date(base + m * 60_000).toISOString(),
      })),
    );
    const q = { branch: "paging", per_page: "2" };
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const r = await p.api("GET", listUrl(acme.repoId, cursor ? { ...q, cursor } : q), acme.token);
      expect(r.status).toBe(200);
      const page = documented<RunPage>("/v1/repos/{repo_id}/workflow-runs", 200, r.json);
      seen.push(...page.workflow_runs.map((x) => x.id));
      cursor = page.next_cursor;
      // A new run lands between page reads: it is newer than the cursor, so later pages never show it.
      if (pages++ === 0)
        await seedRuns(acme.repoId, orgId, [
          { ref: "refs/heads/paging", trigger: "push", outcome: "success", createdAt: new Date().toISOString() },
        ]);
    } while (cursor);
    expect(pages).toBe(4);
    const expected = [...seeded].sort((a, b) => b.createdAt.localeCompare(a.createdAt) || b.id.localeCompare(a.id));
    expect(seen).toEqual(expected.map((x) => x.id));
  });

  it("lists a run's jobs and the org's repos", async () => {
    const jobs = await p.api("GET", `/v1/workflow-runs/${realRunId}/jobs`, acme.token);
    expect(jobs.status).toBe(200);
    const parsed = documented<Jobs>("/v1/workflow-runs/{run_id}/jobs", 200, jobs.json);
    // In order, each with its attempts (a loaded machine may have retried one after a lost lease).
    expect(parsed.jobs.map((j) => [j.name, j.outcome, j.attempts.length >= 1])).toEqual([
      ["build", "success", true],
      ["test", "success", true],
    ]);
    const same = (await p.api("GET", `/v1/workflow-runs/${realRunId}`, acme.token)).json as Jobs;
    expect(parsed.jobs).toEqual(same.jobs);
    documented(
      "/v1/workflow-runs/{run_id}",
      200,
      (await p.api("GET", `/v1/workflow-runs/${realRunId}`, acme.token)).json,
    );

    const repos = await p.api("GET", "/v1/orgs/acme/repos", acme.token);
    expect(repos.status).toBe(200);
    const list = documented<Repos>("/v1/orgs/{org}/repos", 200, repos.json).repos;
    expect(list.map((r) => [r.full_name, r.disconnected_at, r.forge_credential.state])).toEqual([
      ["acme/app", null, "none"],
    ]);
    expect(JSON.stringify(repos.json)).not.toContain(acme.secret);
  });

  it("redirects an artifact download to a short-lived presigned URL, authorised on every request", async () => {
    const artifact = (await buildArtifact()).artifact;
    if (!artifact) throw new Error("the run published no artifact");
    const res = await fetch(`${p.base}/v1/artifacts/${artifact.id}/download`, {
      headers: { authorization: `Bearer ${acme.token}` },
      redirect: "manual",
    });
    expect(res.status).toBe(302);
    const location = res.headers.get("location") ?? "";
    expect(new URL(location).searchParams.get("X-Amz-Expires")).toBe("300");
    const bytes = Buffer.from(await (await fetch(location)).arrayBuffer());
    expect(bytes.toString()).toBe("kiln artifact bytes\n");
    expect(createHash("sha256").update(bytes).digest("hex")).toBe(artifact.sha256);

    // Authorised on every request: a token revoked after one download gets no second URL.
    const t = await createApiToken(p.db, { orgSlug: "acme", role: "auditor", name: "one-download" });
    const once = () =>
      fetch(`${p.base}/v1/artifacts/${artifact.id}/download`, {
        headers: { authorization: `Bearer ${t.token}` },
        redirect: "manual",
      });
    expect((await once()).status).toBe(302);
    await revokeApiToken(p.db, { orgSlug: "acme", tokenId: t.id });
    const refused = await once();
    expect([refused.status, ((await refused.json()) as { error: { code: string } }).error.code]).toEqual([
      401,
      "AUTH.TOKEN_REVOKED",
    ]);

    // Bytes retention deleted: a named 410, not a URL that 404s at the store.
    // An artifact's id is its sealed generation's (the bytes its attestation names).
    await p.db.$executeRaw`UPDATE artifact_generation SET object_deleted_at = now() WHERE id = ${artifact.id}::uuid`;
    const gone = await p.api("GET", `/v1/artifacts/${artifact.id}/download`, acme.token);
    expect([gone.status, gone.json.error.code]).toEqual([410, "ARTIFACT.EXPIRED"]);
    await p.db.$executeRaw`UPDATE artifact_generation SET object_deleted_at = NULL WHERE id = ${artifact.id}::uuid`;
  });

  it("another org's token gets 404s, never data; no token gets 401", async () => {
    const { artifact } = await buildArtifact();
    const attacks: [string, string][] = [
      [`/v1/repos/${acme.repoId}/workflow-runs`, "REPO.NOT_FOUND"],
      [`/v1/workflow-runs/${realRunId}/jobs`, "RUN.NOT_FOUND"],
      ["/v1/orgs/acme/repos", "ORG.NOT_FOUND"],
      [`/v1/artifacts/${artifact?.id}/download`, "ARTIFACT.NOT_FOUND"],
      [`/v1/artifacts/${randomUUID()}/download`, "ARTIFACT.NOT_FOUND"],
      ["/v1/artifacts/not-a-uuid/download", "ARTIFACT.NOT_FOUND"],
    ];
    for (const [url, code] of attacks) {
      const r = await p.api("GET", url, globex.token);
      expect([url, r.status, r.json?.error?.code]).toEqual([url, 404, code]);
      // A malformed id names nothing that could exist, so the builder answers 404 before authenticating.
      const anon = await p.api("GET", url, null);
      expect([url, anon.status]).toEqual([url, url.includes("not-a-uuid") ? 404 : 401]);
    }
    const own = await p.api("GET", "/v1/orgs/globex/repos", globex.token);
    expect(documented<Repos>("/v1/orgs/{org}/repos", 200, own.json).repos.map((r) => r.full_name)).toEqual([
      "globex/app",
    ]);
  });

  it("the dashboard's run page downloads through the same path, for members of the run's org only", async () => {
    await addMember(p.db, { orgSlug: "globex", login: "mallory", role: "admin", forgeId: forgeIdOf("mallory") });
    const browser = await TestBrowser.launch();
    try {
      const page = await browser.page();
      await signIn(page, p.base, "dev", `/orgs/acme/runs/${realRunId}`);
      const link = page.getByRole("link", { name: "Download report (build)" });
      await link.waitFor();
      const href = (await link.getAttribute("href")) ?? "";
      expect(href).toMatch(/^\/v1\/artifacts\/[0-9a-f-]{36}\/download$/);
      const [download] = await Promise.all([page.waitForEvent("download"), link.click()]);
      expect(download.suggestedFilename()).toBe("report");
      const saved = await download.path();
      expect(saved).toBeTruthy();
      // The session's request is authorised per request: a member of another org gets 404.
      const mallory = await TestBrowser.launch();
      try {
        const mp = await mallory.page();
        await signIn(mp, p.base, "mallory", "/orgs/globex");
        const r = await mp.request.get(`${p.base}${href}`, { maxRedirects: 0 });
        expect(r.status()).toBe(404);
        expect((await r.json()).error.code).toBe("ARTIFACT.NOT_FOUND");
      } finally {
        await mallory.close();
      }
    } finally {
      await browser.close();
    }
  });

  it("serves /v1/openapi.json and the agent protocol's document, both valid OpenAPI 3.1", async () => {
    for (const url of ["/v1/openapi.json", "/v1/agent/openapi.json"]) {
      const r = await p.api("GET", url, null);
      expect(r.status).toBe(200);
      const v = new Validator();
      const res = await v.validate(r.json);
      expect(res.errors ?? []).toEqual([]);
      expect(v.version).toBe("3.1");
    }
    const pub = (await p.api("GET", "/v1/openapi.json", null)).json;
    expect(Object.keys(pub.paths)).toContain("/v1/repos/{repo_id}/workflow-runs");
    expect(Object.keys(pub.paths).some((k: string) => k.startsWith("/v1/agent/"))).toBe(false);
  });
});
