import { addMember } from "@kiln/engine";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { screenshot, signIn, TestBrowser, type Page } from "./support/browser.ts";
import { Platform } from "./support/platform.ts";

// The engineer's dashboard, black box: the production web server (`next start`), workers and a host
// agent as processes, driven through real Chromium. Dev sign-in is on (KILN_DEV_LOGIN=1); `next
// start` runs as production, so the session secret must be given explicitly.
const p = new Platform({ KILN_DEV_LOGIN: "1", AUTH_SECRET: "e2e-only-session-secret-0123456789abcdef" });
let acme: Awaited<ReturnType<Platform["seedTenant"]>>;
let browser: TestBrowser;
let dev: Page;
let liveRunId = "";

const WORKFLOW = `version: 1
jobs:
  - name: build
    steps:
      - printf '\\033[32mbuilding\\033[0m kiln ☃\\n'
      - sleep 2
  - name: test
    needs: [build]
    steps:
      - echo "tests pass"
`;

async function trigger(files: Record<string, string>, key: string): Promise<string> {
  const sha = await acme.git.commit(files);
  const r = await p.api(
    "POST",
    `/v1/repos/${acme.repoId}/workflow-runs`,
    acme.token,
    { workflow_path: ".kiln/workflow.yaml", commit_sha: sha },
    { "idempotency-key": key },
  );
  expect(r.status).toBe(202);
  return r.json.run_id as string;
}

/** A tRPC call from inside the signed-in page (its session cookie), returning status and body. */
async function trpc(
  page: Page,
  kind: "query" | "mutation",
  path: string,
  input: unknown,
): Promise<{ status: number; body: any }> {
  return page.evaluate(
    async ([kind, path, input]) => {
      const res =
        kind === "query"
          ? await fetch(`/api/trpc/${path}?input=${encodeURIComponent(JSON.stringify(input))}`)
          : await fetch(`/api/trpc/${path}`, {
              method: "POST",
              headers: { "content-type": "application/json" },
              body: JSON.stringify(input),
            });
      return { status: res.status, body: await res.json() };
    },
    [kind, path, input] as const,
  );
}

beforeAll(async () => {
  await p.start();
  acme = await p.seedTenant("acme", { ".kiln/workflow.yaml": WORKFLOW, "README.md": "acme\n" }, { member: "dev" });
  await p.seedTenant("globex", { ".kiln/workflow.yaml": WORKFLOW }, { member: "eve" });
  await addMember(p.db, { orgSlug: "acme", login: "watcher", role: "auditor" });
  await p.startAgent("agent-1", acme.agentToken);
  browser = await TestBrowser.launch();
  dev = await browser.page();
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await p.stop();
});

// Generous per-test timeouts: a run takes seconds alone, but this machine is often saturated.
describe("dashboard journeys", { timeout: 180_000 }, () => {
  it("refuses an unknown login, then signs a member in with the dev login", async () => {
    await dev.goto(`${p.base}/sign-in`);
    await dev.getByLabel("Member login").fill("nobody");
    await dev.getByRole("button", { name: "Sign in" }).click();
    await dev.getByRole("alert").filter({ hasText: "No Kiln member has that login" }).waitFor();
    await screenshot(dev, "sign-in");

    await signIn(dev, p.base, "dev", "/orgs/acme");
    expect(new URL(dev.url()).pathname).toBe("/orgs/acme");
    await dev.getByTestId("signed-in-as").filter({ hasText: "dev" }).waitFor();
  });

  it("shows a run going to success live, without a reload, with graph, attempts and definition", async () => {
    const runId = await trigger({ "README.md": "live\n" }, "live-1");
    liveRunId = runId;
    await dev.goto(`${p.base}/orgs/acme/runs/${runId}`);
    await dev.evaluate(() => ((window as unknown as { __sameDocument: boolean }).__sameDocument = true));
    await dev.locator("h1 [data-outcome-class='ok']").waitFor({ timeout: 60_000 });
    // Still the same document: the status arrived by polling, not by navigation.
    expect(await dev.evaluate(() => (window as unknown as { __sameDocument?: boolean }).__sameDocument)).toBe(true);
    await dev.locator("#job-graph [data-outcome-class='ok']").nth(1).waitFor();
    expect(await dev.getByTestId("definition").textContent()).toContain("trusted");
    expect(await dev.locator("#artifacts").textContent()).toContain("No artifacts");
    await screenshot(dev, "run-success");
  });

  it("cancels a running job from the page and shows it cancelled", async () => {
    const runId = await trigger(
      { ".kiln/workflow.yaml": 'version: 1\njobs:\n  - name: slow\n    steps: ["sleep 60"]\n' },
      "slow-1",
    );
    await dev.goto(`${p.base}/orgs/acme/runs/${runId}`);
    await dev.locator("#job-graph [data-status='running']").waitFor({ timeout: 60_000 });
    await dev.getByRole("button", { name: "Cancel run" }).click();
    await dev.getByRole("button", { name: "Confirm cancel" }).click();
    // Optimistic first, then what the server decided once the agent stopped the step.
    await dev
      .locator("h1 [data-status='cancelling'], h1 [data-outcome-class='cancelled']")
      .first()
      .waitFor({ timeout: 5_000 });
    await dev.locator("h1 [data-outcome-class='cancelled']").waitFor({ timeout: 30_000 });
    const run = await p.waitForRun(runId, acme.token, (r) => r.status === "completed");
    expect(run.outcome).toBe("cancelled");
  });

  it("names the first failure as the user's and retries it into a new run with a parent link", async () => {
    const runId = await trigger(
      {
        ".kiln/workflow.yaml":
          'version: 1\njobs:\n  - name: unit\n    steps: ["echo ok", "exit 3"]\n  - name: deploy\n    steps: ["true"]\n',
      },
      "fail-1",
    );
    await p.waitForRun(runId, acme.token, (r) => r.status === "completed");
    await dev.goto(`${p.base}/orgs/acme/runs/${runId}`);
    const failure = dev.getByTestId("first-failure");
    await failure.waitFor();
    const text = (await failure.textContent()) ?? "";
    expect(text).toContain("your code");
    expect(text).toContain("failed in step 2");
    expect(text).toContain("step.failed");
    await screenshot(dev, "run-failed");

    await dev.getByRole("button", { name: "Retry run" }).click();
    await dev.waitForURL((u) => u.pathname.startsWith("/orgs/acme/runs/") && !u.pathname.endsWith(runId));
    const childId = new URL(dev.url()).pathname.split("/").pop()!;
    await dev.getByText(`Retry of ${runId.slice(0, 8)}`).waitFor();
    await dev.locator("h1 [data-outcome-class='your_code']").waitFor({ timeout: 60_000 });
    const rows = await p.db.$queryRaw<{ parent_run_id: string; trigger: string; actor: string }[]>`
      SELECT parent_run_id, trigger, actor FROM workflow_run WHERE id = ${childId}::uuid`;
    expect(rows[0]).toEqual({ parent_run_id: runId, trigger: "retry", actor: "dev" });
  });

  it("lists runs with filters and shows the org home", async () => {
    await dev.goto(`${p.base}/orgs/acme/runs?outcome=user_failure`);
    await dev.getByTestId("runs-table").waitFor();
    const results = await dev
      .locator("[data-testid='runs-table'] tbody [data-outcome-class]")
      .evaluateAll((els) => els.map((e) => e.getAttribute("data-outcome-class")));
    expect(results.length).toBeGreaterThanOrEqual(2);
    expect(new Set(results)).toEqual(new Set(["your_code"]));
    await dev.goto(`${p.base}/orgs/acme/runs`);
    await dev.getByTestId("runs-table").waitFor();
    await screenshot(dev, "runs-list");
    await dev.goto(`${p.base}/orgs/acme`);
    await dev.getByText("Platform failures, 7 d").waitFor();
    await dev.locator("#recent-runs [data-testid='runs-table']").waitFor();
  });

  it("an auditor sees runs but cannot cancel or retry, in the UI and at the API", async () => {
    const auditorBrowser = await TestBrowser.launch({ colorScheme: "dark" });
    const auditor = await auditorBrowser.page();
    try {
      await signIn(auditor, p.base, "watcher", "/orgs/acme/runs");
      const [row] = await p.db.$queryRaw<
        { id: string }[]
      >`SELECT id FROM workflow_run WHERE status = 'completed' ORDER BY created_at LIMIT 1`;
      await auditor.goto(`${p.base}/orgs/acme/runs/${row!.id}`);
      const retry = auditor.getByRole("button", { name: "Retry run" });
      await retry.waitFor();
      expect(await retry.isDisabled()).toBe(true);
      const refused = await trpc(auditor, "mutation", "runs.retry", { org: "acme", runId: row!.id });
      expect(refused.status).toBe(403);
      expect(refused.body.error.data.code).toBe("FORBIDDEN");
      await screenshot(auditor, "run-auditor-dark");
    } finally {
      await auditorBrowser.close();
    }
  });

  it("a member of another org cannot open the run, by URL or by API", async () => {
    const [row] = await p.db.$queryRaw<{ id: string }[]>`
      SELECT r.id FROM workflow_run r JOIN org o ON o.id = r.org_id WHERE o.slug = 'acme' LIMIT 1`;
    const eveBrowser = await TestBrowser.launch();
    try {
      const eve = await eveBrowser.page();
      await signIn(eve, p.base, "eve", `/orgs/acme/runs/${row!.id}`);
      await eve.getByTestId("not-a-member").waitFor();
      expect(await eve.content()).not.toContain(row!.id.slice(0, 8) + "</");
      // Through her own org's URL the run id does not resolve either: the query is scoped to globex.
      await eve.goto(`${p.base}/orgs/globex/runs/${row!.id}`);
      await eve.getByText("Run not found").waitFor();
      expect((await trpc(eve, "query", "runs.get", { org: "acme", runId: row!.id })).status).toBe(403);
      expect((await trpc(eve, "query", "runs.get", { org: "globex", runId: row!.id })).status).toBe(404);
      expect((await trpc(eve, "mutation", "runs.cancel", { org: "globex", runId: row!.id })).status).toBe(404);
      // The log stream, authorised by the same session, does not reveal the job either.
      const [job] = await p.db.$queryRaw<
        { id: string }[]
      >`SELECT id FROM job_run WHERE run_id = ${row!.id}::uuid LIMIT 1`;
      expect(await eve.evaluate(async (id) => (await fetch(`/v1/jobs/${id}/logs/events`)).status, job!.id)).toBe(404);
    } finally {
      await eveBrowser.close();
    }
  });

  it("streams a job's log into the viewer: ANSI colour, UTF-8, permalinks and search", async () => {
    // Real end to end: the agent shipped the step's output to the log API, which authorises this
    // page by its session cookie; the viewer reads the SSE stream.
    const [job] = await p.db.$queryRaw<
      { id: string }[]
    >`SELECT id FROM job_run WHERE run_id = ${liveRunId}::uuid AND name = 'build'`;
    // The agent's own lines ("[kiln] image: ...") may come first: find the step's line, then open
    // the page again at its permalink.
    const page = `${p.base}/orgs/acme/runs/${liveRunId}/jobs/${job!.id}`;
    await dev.goto(page);
    const log = dev.getByRole("region", { name: /Log output of build/ });
    const built = log.locator("[data-line]").filter({ hasText: "building kiln ☃" });
    await built.waitFor({ timeout: 30_000 });
    const n = await built.getAttribute("data-line");
    await dev.goto(`${page}#L${n}`);
    await dev.locator("[data-log-state='ended']").waitFor({ timeout: 30_000 });
    const line = log.locator(`[data-line='${n}']`);
    const green = await line.locator("span span").first().getAttribute("style");
    expect(green).toContain("--kiln-ansi-2");
    expect(await line.getAttribute("class")).toContain("bg-yellow-100");
    // Case-insensitive, and only the step's own line: the agent's "[kiln] ..." lines do not end in ☃.
    await dev.getByLabel("Search the log").fill("KILN ☃");
    await dev.getByText("1 match", { exact: true }).waitFor();
    await dev.getByLabel("Search the log").press("Enter");
    await dev.getByText("1 / 1").waitFor();
    await screenshot(dev, "job-log");
  });

  it("signs out; signed-out pages redirect to sign-in and tRPC refuses", async () => {
    await dev.goto(`${p.base}/orgs/acme`);
    await dev.getByRole("button", { name: "Sign out" }).click();
    await dev.waitForURL(/\/sign-in/);
    await dev.goto(`${p.base}/orgs/acme/runs`);
    await dev.waitForURL((u) => u.pathname === "/sign-in" && u.searchParams.get("from") === "/orgs/acme/runs");
    expect((await fetch(`${p.base}/api/trpc/tenants.list`)).status).toBe(401);
  });
});
