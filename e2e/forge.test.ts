import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtemp, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import examples from "@octokit/webhooks-examples/api.github.com/index.json" with { type: "json" };
import { freePort, startFakeForge, type FakeForge, type StatusRecord } from "@kiln/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FaultStack, sleep, type Tenant } from "./faults/support/harness.ts";
import { signIn, TestBrowser, type Page } from "./support/browser.ts";
import { forgeIdOf } from "./support/seed-tenant.ts";

// Issue 19's proof: the real platform (web, workers, host agents as processes) against the fake
// forge (GitHub's documented responses, @kiln/testkit): webhooks come from it signed, statuses go
// back to it from the outbox, rate limits and outages delay them without losing any, a delivery
// made while Kiln was down is recovered after restart as exactly one run, and PR close cancels.

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, "..");
// The web's own origin (the development sign-in the browser test uses is refused elsewhere).
let PUBLIC_URL = "";
const SECRETS_KEY = randomBytes(32).toString("base64");
const RUN_CTX = "kiln/.kiln/workflow.yaml";
let s: FaultStack;
let forge: FakeForge;
let tokenDir: string;
let hookSeq = 7_000;

const forgeEnv = () => ({
  KILN_GITHUB_API_URL: forge.url,
  KILN_PUBLIC_URL: PUBLIC_URL,
  KILN_SECRETS_KEY: SECRETS_KEY,
  KILN_FORGE_RECONCILE_MS: "1000",
});

beforeAll(async () => {
  forge = await startFakeForge();
  tokenDir = await mkdtemp(path.join(os.tmpdir(), "kiln-forge-e2e-"));
  s = await FaultStack.create({
    env: {
      KILN_LEASE_TTL_MS: "5000",
      KILN_RETRY_BUDGET: "1",
      KILN_DEV_LOGIN: "1",
      AUTH_SECRET: "e2e-only-session-secret-0123456789abcdef",
    },
  });
  const port = await freePort();
  PUBLIC_URL = `http://127.0.0.1:${port}`;
  s.startWorkers("workers", forgeEnv());
  await s.startWeb("web", { port, env: forgeEnv() });
  s.startAgent(
    "agent-1",
    (await s.seedTenant("fg-agents", { ".kiln/workflow.yaml": "version: 1\njobs: [{name: a, steps: [x]}]\n" }))
      .agentToken,
  );
}, 240_000);
afterAll(async () => {
  await s?.stop();
  await forge?.stop();
});

/** Via the CLI, as an operator would: the token from a file, the hook id; then `repo forge`. */
async function connect(slug: string, workflow: string): Promise<Tenant & { hookId: number }> {
  const t = await s.seedTenant(slug, { ".kiln/workflow.yaml": workflow }, { member: "dev" });
  const hookId = ++hookSeq;
  const token = `ghp_${randomBytes(16).toString("hex")}`;
  forge.addRepo(t.repoName, {
    token,
    hook: { id: hookId, url: `${s.baseUrl()}/v1/webhooks/github`, secret: t.secret },
  });
  const file = path.join(tokenDir, `${slug}.token`);
  await writeFile(file, `${token}\n`, { mode: 0o600 });
  // The CLI proves the token against the forge before storing it (issue 28): it needs the forge's URL.
  const env = { ...process.env, DATABASE_URL: s.dbUrl, ...forgeEnv() };
  const cli = (args: string[]) =>
    run(process.execPath, ["--import", "tsx", "scripts/kiln.ts", ...args, "--json"], { cwd: ROOT, env });
  await cli(["repo", "forge-set", t.repoName, "--forge-token-file", file, "--forge-hook-id", String(hookId)]);
  const shown = JSON.parse((await cli(["repo", "forge", t.repoName])).stdout) as Record<string, unknown>;
  expect(shown).toMatchObject({ credential: "token", token_stored: true, hook_id: hookId, credential_problem: null });
  expect(JSON.stringify(shown)).not.toContain(token);
  return { ...t, hookId };
}

function example(event: string, action?: string): Record<string, any> {
  const g = (examples as { name: string; examples: Record<string, unknown>[] }[]).find((x) => x.name === event);
  const e = g?.examples.find((x) => action === undefined || x.action === action);
  if (!e) throw new Error(`no ${event} example`);
  const p = structuredClone(e) as Record<string, any>;
  // Only deliveries signed with the App's own secret may name an installation (issue 28): these hooks
  // are the repo's, signed with its secret, so they carry none (GitHub's samples are App deliveries).
  delete p.installation;
  return p;
}

function push(t: Tenant, sha: string): Record<string, any> {
  const p = example("push");
  Object.assign(p, { ref: "refs/heads/main", after: sha, deleted: false });
  p.repository.full_name = t.repoName;
  p.sender.id = forgeIdOf("dev");
  return p;
}

function pullRequest(t: Tenant, action: string, number: number, sha: string): Record<string, any> {
  const p = example("pull_request", action === "synchronize" ? "synchronize" : action);
  p.action = action;
  p.number = number;
  p.pull_request.head.sha = sha;
  p.pull_request.head.repo = { ...p.pull_request.head.repo, full_name: t.repoName };
  p.pull_request.base.repo.full_name = t.repoName;
  p.repository.full_name = t.repoName;
  p.sender.id = forgeIdOf("dev");
  return p;
}

async function waitFor<T>(what: string, f: () => T | Promise<T>, ok: (v: T) => boolean, ms = 90_000): Promise<T> {
  const deadline = Date.now() + ms;
  let last: T | undefined;
  while (Date.now() < deadline) {
    last = await f();
    if (ok(last)) return last;
    await sleep(200);
  }
  throw new Error(`${what}: not reached within ${ms} ms (last: ${JSON.stringify(last)})\n${s.logs()}`);
}

async function runFor(t: Tenant, sha: string): Promise<string> {
  const rows = await waitFor(
    `a run for ${sha}`,
    () =>
      s.db.$queryRaw<
        { id: string }[]
      >`SELECT id FROM workflow_run WHERE repo_id = ${t.repoId}::uuid AND commit_sha = ${sha}`,
    (r) => r.length > 0,
  );
  return rows[0]?.id ?? "";
}

/** The forge's statuses for a context, oldest first, once the last one has the wanted state. */
async function statusesUntil(
  t: Tenant,
  sha: string,
  context: string,
  state: string,
  ms = 90_000,
): Promise<StatusRecord[]> {
  return waitFor(
    `${context} ${state} on the forge`,
    () => forge.statuses(t.repoName, sha).filter((x) => x.context === context),
    (l) => l.at(-1)?.state === state,
    ms,
  );
}

const QUICK =
  'version: 1\njobs:\n  - name: build\n    steps: ["echo built"]\n  - name: test\n    steps: ["echo tested"]\n';
const FAILING = 'version: 1\njobs:\n  - name: test\n    steps: ["echo no; exit 3"]\n';
const SLOW =
  "version: 1\njobs:\n  - name: work\n    steps:\n      - for i in $(seq 1 40); do echo $i; sleep 0.25; done\n";

describe("statuses back to the forge", () => {
  it("a push: pending at admission, success at the end, per run and per job, linking the run page", async () => {
    const t = await connect("fg-push", QUICK);
    const sha = t.git.headSha;
    const d = await forge.deliver(t.repoName, "push", push(t, sha));
    expect(d.statusCode).toBe(202);
    const runId = await runFor(t, sha);
    const runStatuses = await statusesUntil(t, sha, RUN_CTX, "success");
    expect(runStatuses[0]).toMatchObject({ state: "pending" });
    expect(runStatuses.at(-1)).toMatchObject({
      state: "success",
      description: "Kiln: succeeded",
      target_url: `${PUBLIC_URL}/orgs/fg-push/runs/${runId}`,
    });
    for (const job of ["build", "test"]) {
      const j = await statusesUntil(t, sha, `${RUN_CTX}/${job}`, "success");
      expect(j.at(-1)?.target_url).toMatch(new RegExp(`^${PUBLIC_URL}/orgs/fg-push/runs/${runId}/jobs/[0-9a-f-]{36}$`));
    }
    // Never a pending after the final state, for any context.
    for (const [ctx, last] of forge.latestStatuses(t.repoName, sha))
      expect([ctx, last.state]).toEqual([ctx, "success"]);
    const api = await waitFor(
      "the run API shows the statuses delivered",
      () => s.api("GET", `/v1/workflow-runs/${runId}`, t.token),
      (r) =>
        r.json?.forge_statuses?.length === 3 && r.json.forge_statuses.every((x: any) => x.delivery === "delivered"),
    );
    expect(api.json.forge_statuses.find((x: any) => x.context === RUN_CTX)).toMatchObject({
      state: "success",
      delivered_state: "success",
    });
  }, 150_000);

  it("a pull request: pending then failure on the PR's head commit, the description naming your code and the cause", async () => {
    const t = await connect("fg-pr", FAILING);
    const sha = t.git.headSha;
    await forge.deliver(t.repoName, "pull_request", pullRequest(t, "opened", 12, sha));
    const l = await statusesUntil(t, sha, RUN_CTX, "failure");
    expect(l[0]?.state).toBe("pending");
    expect(l.at(-1)?.description).toMatch(/^Kiln: failed in your code: /);
    expect([...(l.at(-1)?.description ?? "")].length).toBeLessThanOrEqual(140);
    expect((await statusesUntil(t, sha, `${RUN_CTX}/test`, "failure")).at(-1)?.description).toMatch(/exit/);
  }, 150_000);

  it("a platform failure that was retried says so on a success; one that exhausted its retries is error, the platform's fault", async () => {
    const t = await connect("fg-platform", SLOW);
    // Retried once: the agent dies after its claim, the lease lapses, a replacement succeeds.
    await s.signal("agent-1", "SIGKILL");
    s.startAgent("agent-k1", t.agentToken);
    const sha = t.git.headSha;
    await forge.deliver(t.repoName, "push", push(t, sha));
    const runId = await runFor(t, sha);
    const attempts = (n: number) =>
      waitFor(
        `attempt ${n}`,
        () =>
          s.db.$queryRaw<{ epoch: number }[]>`SELECT epoch FROM attempt WHERE run_id = ${runId}::uuid AND epoch = ${n}`,
        (r) => r.length > 0,
      );
    await attempts(1);
    await s.signal("agent-k1", "SIGKILL");
    s.startAgent("agent-k2", t.agentToken);
    const ok = await statusesUntil(t, sha, RUN_CTX, "success", 120_000);
    expect(ok.at(-1)?.description).toBe("Kiln: succeeded after 1 platform retry (Kiln's fault, not your code)");

    // Exhausted (KILN_RETRY_BUDGET=1): both attempts lose their host.
    const sha2 = await t.git.commit({ "NOTE.md": "second" });
    await forge.deliver(t.repoName, "push", push(t, sha2));
    const run2 = await runFor(t, sha2);
    await waitFor(
      "attempt 1",
      () => s.db.$queryRaw<{ epoch: number }[]>`SELECT epoch FROM attempt WHERE run_id = ${run2}::uuid`,
      (r) => r.length >= 1,
    );
    await s.signal("agent-k2", "SIGKILL");
    s.startAgent("agent-k3", t.agentToken);
    await waitFor(
      "attempt 2",
      () => s.db.$queryRaw<{ epoch: number }[]>`SELECT epoch FROM attempt WHERE run_id = ${run2}::uuid AND epoch = 2`,
      (r) => r.length >= 1,
    );
    await s.signal("agent-k3", "SIGKILL");
    const err = await statusesUntil(t, sha2, RUN_CTX, "error", 120_000);
    expect(err.at(-1)?.description).toMatch(/^Kiln platform failure, not your code: lease\.expired/);
    s.startAgent("agent-2", t.agentToken);
  }, 300_000);

  it("a rate limit (429, Retry-After) and then an outage delay the statuses; none is lost", async () => {
    const t = await connect("fg-limits", QUICK);
    const sha = t.git.headSha;
    // Only this repo's status calls: the reconciler polls every hook's deliveries meanwhile.
    forge.rateLimit({
      flavour: "secondary",
      status: 429,
      retryAfterS: 4,
      times: 1,
      pathIncludes: `/repos/${t.repoName}/statuses/`,
    });
    const limitedAt = Date.now();
    await forge.deliver(t.repoName, "push", push(t, sha));
    await runFor(t, sha);
    const first = await waitFor(
      "a status after the 429",
      () => forge.statuses(t.repoName, sha),
      (l) => l.length > 0,
    );
    // The first status accepted after the 429 came no sooner than Retry-After asked.
    const limited = forge.requests.find((r) => r.status === 429 && r.path.includes(`/repos/${t.repoName}/statuses/`));
    expect(limited).toBeDefined();
    expect(first[0]!.at - limited!.at).toBeGreaterThanOrEqual(3_500);
    expect(limited!.at).toBeGreaterThanOrEqual(limitedAt);
    for (const ctx of [RUN_CTX, `${RUN_CTX}/build`, `${RUN_CTX}/test`]) await statusesUntil(t, sha, ctx, "success");

    // The forge is down for a whole run: its statuses wait, visible on the run API, and follow later.
    forge.fail({ status: 503 });
    const sha2 = await t.git.commit({ "NOTE.md": "during the outage" });
    await forge.deliver(t.repoName, "push", push(t, sha2));
    const run2 = await runFor(t, sha2);
    await s.waitForRun(run2, t.token, (r) => r.status === "completed", 90_000);
    const during = await waitFor(
      "undelivered statuses with their error on the run API",
      () => s.api("GET", `/v1/workflow-runs/${run2}`, t.token),
      (r) =>
        r.json?.forge_statuses?.some(
          (x: any) =>
            x.context === RUN_CTX && x.state === "success" && x.delivery === "pending" && x.last_http_status === 503,
        ),
    );
    expect(during.json.forge_statuses.length).toBe(3);
    expect(forge.statuses(t.repoName, sha2)).toHaveLength(0);
    await sleep(3_000);
    forge.recover();
    for (const ctx of [RUN_CTX, `${RUN_CTX}/build`, `${RUN_CTX}/test`])
      await statusesUntil(t, sha2, ctx, "success", 120_000);
  }, 240_000);
});

describe("missed deliveries", () => {
  it("a push the forge delivered while Kiln was down is recovered after restart as exactly one run", async () => {
    const t = await connect("fg-missed", QUICK);
    await s.signal("web", "SIGKILL");
    await s.signal("workers", "SIGKILL");
    const sha = await t.git.commit({ "CHANGELOG.md": "while down" });
    const d = await forge.deliver(t.repoName, "push", push(t, sha));
    expect(d.statusCode).toBe(502);
    const none = await s.db.$queryRaw<
      { n: number }[]
    >`SELECT count(*)::int AS n FROM workflow_run WHERE commit_sha = ${sha}`;
    expect(none[0]?.n).toBe(0);
    // Web first: the reconciler's redelivery (at the workers' start) must find Kiln listening.
    await s.restart("web");
    await s.restart("workers");
    await runFor(t, sha);
    await statusesUntil(t, sha, RUN_CTX, "success", 120_000);
    // Several reconciler passes later, still exactly one run for that delivery.
    await sleep(4_000);
    const runs = await s.db.$queryRaw<
      { n: number }[]
    >`SELECT count(*)::int AS n FROM workflow_run WHERE commit_sha = ${sha}`;
    expect(runs[0]?.n).toBe(1);
    expect(
      forge
        .deliveries(t.repoName)
        .filter((x) => x.guid === d.guid)
        .map((x) => [x.redelivery, x.status_code]),
    ).toEqual([
      [false, 502],
      [true, 202],
    ]);
  }, 240_000);
});

describe("pull requests", () => {
  it("closed cancels the PR's unfinished run, and the forge is told", async () => {
    const t = await connect("fg-close", SLOW);
    const sha = t.git.headSha;
    await forge.deliver(t.repoName, "pull_request", pullRequest(t, "opened", 31, sha));
    const runId = await runFor(t, sha);
    await s.waitForRun(runId, t.token, (r) => r.status === "running" && r.jobs[0]?.attempts.length > 0, 90_000);
    const closed = await forge.deliver(t.repoName, "pull_request", pullRequest(t, "closed", 31, sha));
    expect(closed.statusCode).toBe(200);
    const r = await s.waitForRun(runId, t.token, (x) => x.status === "completed", 60_000);
    expect(r).toMatchObject({ outcome: "cancelled" });
    const l = await statusesUntil(t, sha, RUN_CTX, "error");
    expect(l.at(-1)?.description).toMatch(/^Kiln: cancelled: run\.cancelled/);
  }, 180_000);
});

describe("the run page's forge panel (Chromium)", () => {
  let browser: TestBrowser;
  let page: Page;
  beforeAll(async () => {
    browser = await TestBrowser.launch();
    page = await browser.page();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
  });

  it("shows statuses owed during an outage with the forge's error, and updates live to delivered", async () => {
    const t = await connect("fg-page", QUICK);
    forge.fail({ status: 503 });
    const sha = t.git.headSha;
    await forge.deliver(t.repoName, "push", push(t, sha));
    const runId = await runFor(t, sha);
    await s.waitForRun(runId, t.token, (r) => r.status === "completed", 90_000);
    await signIn(page, s.baseUrl(), "dev", `/orgs/fg-page/runs/${runId}`);
    const panel = page.getByTestId("forge-statuses");
    const runRow = panel.locator(`tr[data-context="${RUN_CTX}"]`);
    await runRow.waitFor();
    await waitFor(
      "the panel shows the 503",
      async () => (await runRow.textContent()) ?? "",
      (x) => x.includes("503"),
      60_000,
    );
    expect(await runRow.getAttribute("data-delivery")).toBe("pending");
    expect(await runRow.textContent()).toContain("not yet delivered");
    forge.recover();
    // No reload: the page keeps polling while a status is owed.
    await waitFor(
      "the panel shows delivered",
      () => runRow.getAttribute("data-delivery"),
      (x) => x === "delivered",
      90_000,
    );
    expect(await panel.locator('tr[data-delivery="delivered"]').count()).toBe(3);
  }, 180_000);

  it("a repo without a forge credential says so instead of an empty table", async () => {
    const t = await s.seedTenant("fg-nocred", { ".kiln/workflow.yaml": QUICK }, { member: "dev" });
    const r = await s.webhook(t, `nocred-${Date.now()}`);
    const runId = r.json.run_id as string;
    await s.waitForRun(runId, t.token, (x) => x.status === "completed", 90_000);
    await page.goto(`${s.baseUrl()}/orgs/fg-nocred/runs/${runId}`);
    await page.getByText("No forge statuses").waitFor();
    expect(await page.getByTestId("forge-statuses").count()).toBe(0);
  }, 120_000);
});
