import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { addMember, createApiToken } from "@kiln/engine";
import { s3Env, startS3, type S3Handle } from "@kiln/testkit";
import Ajv2020 from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signIn, TestBrowser } from "./support/browser.ts";
import { Platform } from "./support/platform.ts";

// Issue 21 black box against `next start`, the workers, a host agent and s3rver: a default-branch
// artifact carries its retention class and expiry (checked against the served OpenAPI schema), holds
// are refused to members and to another org, the plan keeps a held artifact and is the org's alone,
// an org admin cannot lengthen a window, and the run page shows class, expiry and the hold control.
let s3: S3Handle;
let s3Dir = "";
let p: Platform;
let acme: Awaited<ReturnType<Platform["seedTenant"]>>;
let runId = "";
let jobId = "";
let artifactId = "";
const tokens: Record<string, string> = {};
const ajv = addFormats(new Ajv2020({ strict: false }));

const WORKFLOW = `version: 1
jobs:
  - name: build
    steps: ["printf 'kept by provenance\\n' > out.txt"]
    artifacts:
      publish:
        - {name: report, path: out.txt}
`;

beforeAll(async () => {
  s3Dir = await mkdtemp(path.join(os.tmpdir(), "kiln-e2e-s3-"));
  s3 = await startS3({ dataDir: s3Dir, bucket: "kiln" });
  p = new Platform({ KILN_DEV_LOGIN: "1", AUTH_SECRET: "e2e-only-session-secret-0123456789abcdef", ...s3Env(s3) });
  await p.start();
  acme = await p.seedTenant("acme", { ".kiln/workflow.yaml": WORKFLOW }, { member: "dev" });
  await p.seedTenant("globex", { ".kiln/workflow.yaml": WORKFLOW }, { member: "eve" });
  await addMember(p.db, { orgSlug: "acme", login: "ada", role: "admin", forgeId: 9_210_001 });
  tokens.admin = (await createApiToken(p.db, { orgSlug: "acme", role: "admin" })).token;
  tokens.auditor = (await createApiToken(p.db, { orgSlug: "acme", role: "auditor" })).token;
  tokens.globex = (await createApiToken(p.db, { orgSlug: "globex", role: "admin" })).token;
  await p.startAgent("agent-1", acme.agentToken);
  const r = await p.api(
    "POST",
    `/v1/repos/${acme.repoId}/workflow-runs`,
    acme.token,
    { workflow_path: ".kiln/workflow.yaml", commit_sha: acme.git.headSha },
    { "idempotency-key": "retention-run" },
  );
  expect(r.status).toBe(202);
  runId = r.json.run_id;
  const run = await p.waitForRun(runId, acme.token, (x) => x.status === "completed", 120_000);
  jobId = run.jobs[0].id;
}, 300_000);

afterAll(async () => {
  await p?.stop();
  await s3?.stop();
  await rm(s3Dir, { recursive: true, force: true });
});

async function documented(method: "get" | "post", template: string, status: number, body: unknown): Promise<void> {
  const doc = (await p.api("GET", "/v1/openapi.json", null)).json;
  const schema = doc.paths[template]?.[method]?.responses[String(status)]?.content?.["application/json"]?.schema;
  if (!schema) throw new Error(`no ${status} schema for ${method} ${template}`);
  const validate = ajv.compile(schema);
  if (!validate(body)) throw new Error(`${method} ${template}: ${ajv.errorsText(validate.errors)}`);
}

describe("retention over the API", { timeout: 120_000 }, () => {
  it("lists the artifact's class and expiry, holds it for admins only, plans per org, never lengthens", async () => {
    const list = await p.api("GET", `/v1/jobs/${jobId}/artifacts`, acme.token);
    expect(list.status).toBe(200);
    await documented("get", "/v1/jobs/{job_id}/artifacts", 200, list.json);
    const art = list.json.artifacts[0];
    expect(art).toMatchObject({ name: "report", retention_class: "default_branch", expired_at: null });
    expect(Date.parse(art.expires_at) - Date.now()).toBeGreaterThan(90 * 86_400_000);
    artifactId = art.id;

    const reason = { reason: "e2e audit hold" };
    expect((await p.api("POST", `/v1/artifacts/${artifactId}/hold`, acme.token, reason)).json.error.code).toBe(
      "AUTH.FORBIDDEN",
    );
    const foreign = await p.api("POST", `/v1/artifacts/${artifactId}/hold`, tokens.globex!, reason);
    expect([foreign.status, foreign.json.error.code]).toEqual([404, "ARTIFACT.NOT_FOUND"]);
    const held = await p.api("POST", `/v1/artifacts/${artifactId}/hold`, tokens.admin!, reason);
    expect(held.status).toBe(201);
    await documented("post", "/v1/artifacts/{artifact_id}/hold", 201, held.json);
    const lift = await p.api("DELETE", `/v1/artifacts/${artifactId}/hold`, tokens.globex!);
    expect([lift.status, lift.json.error.code]).toEqual([404, "RETENTION.HOLD_NOT_FOUND"]);

    const at = new Date(Date.now() + 120 * 86_400_000).toISOString();
    const plan = await p.api("GET", `/v1/orgs/acme/retention/plan?at=${encodeURIComponent(at)}`, tokens.auditor!);
    expect(plan.status).toBe(200);
    await documented("get", "/v1/orgs/{org}/retention/plan", 200, plan.json);
    expect(plan.json.kept).toContainEqual(expect.objectContaining({ id: artifactId, reason: "hold" }));
    const spy = await p.api("GET", `/v1/orgs/acme/retention/plan?at=${encodeURIComponent(at)}`, tokens.globex!);
    expect(spy.status).toBe(404);

    const longer = await p.api("PUT", "/v1/orgs/acme/retention", tokens.admin!, {
      kind: "artifact",
      class: "other",
      days: 30,
    });
    expect([longer.status, longer.json.error.code]).toEqual([422, "RETENTION.WINDOW_LENGTHENED"]);
    const shorter = await p.api("PUT", "/v1/orgs/acme/retention", tokens.admin!, {
      kind: "artifact",
      class: "other",
      days: 7,
    });
    expect(shorter.status).toBe(200);
    expect(shorter.json.effective.artifact.other).toBe(7);
    const holds = await p.api("GET", "/v1/orgs/acme/retention/holds", tokens.auditor!);
    await documented("get", "/v1/orgs/{org}/retention/holds", 200, holds.json);
    expect(holds.json.holds.map((h: { artifact_id: string }) => h.artifact_id)).toEqual([artifactId]);
  });

  it("shows class, expiry and the hold on the run page; an admin lifts and places it with the keyboard", async () => {
    const browser = await TestBrowser.launch();
    try {
      const page = await browser.page();
      await signIn(page, p.base, "ada", `/orgs/acme/runs/${runId}`);
      const cell = page.getByTestId("artifact-retention").first();
      await cell.getByText("default branch").waitFor();
      await cell.getByText(/expires \d{4}-\d{2}-\d{2}/).waitFor();
      await cell.getByText("· held").waitFor();
      await cell.getByRole("button", { name: "Lift the retention hold on report" }).click();
      await cell.getByRole("button", { name: "Hold report past its expiry" }).waitFor();
      expect(await cell.getByText("· held").count()).toBe(0);
      await cell.getByRole("button", { name: "Hold report past its expiry" }).press("Enter");
      await cell.getByLabel("Reason for holding report").fill("kept for the dashboard test");
      await cell.getByLabel("Reason for holding report").press("Enter");
      await cell.getByText("· held").waitFor();
    } finally {
      await browser.close();
    }
    // A member sees the class and expiry but no hold control (a page context holds one session).
    const other = await TestBrowser.launch();
    try {
      const member = await other.page();
      await signIn(member, p.base, "dev", `/orgs/acme/runs/${runId}`);
      await member.getByTestId("artifact-retention").first().getByText("default branch").waitFor();
      expect(await member.getByTestId("artifact-hold").count()).toBe(0);
    } finally {
      await other.close();
    }
  });
});
