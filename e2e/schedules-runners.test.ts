import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { screenshot, signIn, TestBrowser, type Page } from "./support/browser.ts";
import { Platform } from "./support/platform.ts";
import type { SeededTenant } from "./support/seed-tenant.ts";

// Issue 20, black box: a per-minute schedule with two worker processes (one of them killed and
// replaced, with a slot after that) admits exactly one run per slot at the default branch's head; a job
// asking for a label no host has waits READY with the named reason, shown live on the run page
// next to a job waiting with a queue position, and runs when such an agent connects. Chromium
// checks the run page and the schedule list. The schedule is added first and its two slots pass
// while the other cases run, so the suite takes about two minutes, not two plus the rest.

const p = new Platform({
  KILN_DEV_LOGIN: "1",
  AUTH_SECRET: "e2e-only-session-secret-0123456789abcdef",
  KILN_SCHEDULE_TICK_MS: "1000",
});
let nightly: SeededTenant;
let gpuco: SeededTenant;
let scheduleId = "";
let browser: TestBrowser;
let page: Page;

const NIGHTLY = 'version: 1\njobs:\n  - name: nightly\n    steps: ["echo nightly at $(git rev-parse --short HEAD)"]\n';
const GPU = `version: 1
jobs:
  - name: train
    runs_on: {labels: [gpu]}
    steps: ["echo training"]
  - name: lint
    needs: []
    steps: ["echo lint"]
`;

async function orgIdOf(slug: string): Promise<string> {
  const rows = await p.db.$queryRaw<{ id: string }[]>`SELECT id FROM org WHERE slug = ${slug}`;
  return rows[0]?.id ?? "";
}

beforeAll(async () => {
  await p.start();
  // A second workers process from the start: two schedulers race for every slot.
  p.startWorkers("workers-2", { KILN_SCHEDULE_TICK_MS: "1000" });
  nightly = await p.seedTenant("nightly", { ".kiln/workflow.yaml": NIGHTLY, "README.md": "n\n" }, { member: "dana" });
  gpuco = await p.seedTenant("gpuco", { ".kiln/workflow.yaml": GPU }, { member: "gina" });
  const added = await p.api("POST", `/v1/repos/${nightly.repoId}/schedules`, nightly.token, {
    cron: "* * * * *",
    timezone: "Europe/Berlin",
  });
  expect(added.status).toBe(201);
  scheduleId = added.json.id;
  // A host without labels in the shared development pool: it runs everything but `train`.
  await p.startAgent("agent-plain", nightly.agentToken);
  browser = await TestBrowser.launch();
  page = await browser.page();
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await p.stop();
});

describe("schedules and runner selection", { timeout: 200_000 }, () => {
  it("keeps a job asking for a label no host has READY with the reason, shows it live, and runs it when such an agent connects", async () => {
    // gpuco's hard cap 0 in the pool: `lint` waits its turn with a queue position, `train` for a host.
    await p.db.$executeRaw`INSERT INTO entitlement (org_id, pool, slots, weight, hard_cap)
      VALUES (${await orgIdOf("gpuco")}::uuid, 'default', 0, 1, 0)`;
    const trig = await p.api(
      "POST",
      `/v1/repos/${gpuco.repoId}/workflow-runs`,
      gpuco.token,
      { workflow_path: ".kiln/workflow.yaml", commit_sha: gpuco.git.headSha },
      { "idempotency-key": "gpu-1" },
    );
    expect(trig.status).toBe(202);
    const runId: string = trig.json.run_id;
    const waiting = await p.waitForRun(
      runId,
      gpuco.token,
      (r) => r.jobs?.length === 2 && r.jobs.every((j: any) => j.status === "ready" && j.queue !== null),
    );
    const byName = Object.fromEntries(waiting.jobs.map((j: any) => [j.name, j]));
    expect(byName.train.queue).toMatchObject({
      reason: "no_eligible_host",
      position: null,
      waiting: { code: "host_lacks_labels", message: "no host in pool default has labels [gpu]" },
    });
    expect(byName.lint.queue.reason).toBe("org_cap");
    expect(byName.lint.queue.position).toBeGreaterThanOrEqual(1);

    await signIn(page, p.base, "gina", `/orgs/gpuco/runs/${runId}`);
    const table = page.getByTestId("waiting-jobs");
    await table.waitFor();
    const train = page.getByTestId("waiting-train");
    expect(await train.getByTestId("queue-reason").textContent()).toContain("no host in pool default has labels [gpu]");
    expect(await train.getByTestId("queue-position").textContent()).toBe("—");
    const lint = page.getByTestId("waiting-lint");
    expect(await lint.getByTestId("queue-position").textContent()).toMatch(/^#\d+$/);
    expect(await lint.getByTestId("queue-reason").textContent()).toContain("concurrency cap");
    await screenshot(page, "run-waiting-jobs");

    // The cap is lifted: `lint` runs and leaves the waiting list live, `train` still waits.
    await p.db.$executeRaw`DELETE FROM entitlement WHERE org_id = ${await orgIdOf("gpuco")}::uuid`;
    await lint.waitFor({ state: "detached", timeout: 60_000 });
    expect(await train.getByTestId("queue-reason").textContent()).toContain("labels [gpu]");

    // Such an agent connects: it takes `train`, nothing else had to change.
    await p.startAgent("agent-gpu", gpuco.agentToken, { KILN_AGENT_LABELS: "gpu,cuda12", KILN_HOSTNAME: "agent-gpu" });
    const done = await p.waitForRun(runId, gpuco.token, (r) => r.status === "completed", 90_000);
    expect(done.outcome).toBe("success");
    const trainDone = done.jobs.find((j: any) => j.name === "train");
    expect(trainDone.attempts.map((a: any) => a.host)).toEqual(["agent-gpu"]);
    await table.waitFor({ state: "detached", timeout: 30_000 });
  });

  it("lists the schedule with its next runs in the dashboard and refuses a bad time zone under its field", async () => {
    // Another member, in a browser of their own (a fresh profile: no session cookie from gina).
    const own = await TestBrowser.launch();
    try {
      await schedulesJourney(await own.page());
    } finally {
      await own.close();
    }
  });

  it("admits exactly one run per slot with two worker processes, one of them replaced between slots", async () => {
    const slots = async () =>
      p.db.$queryRaw<{ slot_at: Date; run_id: string | null; commit_sha: string }[]>`
        SELECT slot_at, run_id, commit_sha FROM schedule_slot WHERE schedule_id = ${scheduleId}::uuid ORDER BY slot_at`;
    // One scheduler crashes and another process takes its place; at least one slot after that.
    const killedAt = Date.now();
    await p.signal("workers-2", "SIGKILL");
    p.startWorkers("workers-3", { KILN_SCHEDULE_TICK_MS: "1000" });
    const deadline = Date.now() + 150_000;
    for (;;) {
      const got = await slots();
      if (got.length >= 2 && got.some((s) => s.slot_at.getTime() > killedAt)) break;
      if (Date.now() > deadline) throw new Error(`slots: ${JSON.stringify(got)}\n${p.logs()}`);
      await new Promise((r) => setTimeout(r, 500));
    }
    // Several more ticks of every scheduler: nothing more for these slots.
    await new Promise((r) => setTimeout(r, 3_000));
    const got = await slots();
    expect(got.length).toBeGreaterThanOrEqual(2);
    const runs = await p.db.$queryRaw<{ id: string; actor: string; trust_class: string; commit_sha: string }[]>`
      SELECT id, actor, trust_class, commit_sha FROM workflow_run
      WHERE repo_id = ${nightly.repoId}::uuid AND trigger = 'schedule' ORDER BY created_at`;
    // One run per slot, each slot a whole minute after the previous one.
    expect(runs.map((r) => r.id)).toEqual(got.map((s) => s.run_id));
    for (const [i, s] of got.entries()) {
      expect(s.slot_at.getUTCSeconds()).toBe(0);
      if (i > 0) expect(s.slot_at.getTime() - (got[i - 1]?.slot_at.getTime() ?? 0)).toBe(60_000);
    }
    expect(new Set(runs.map((r) => `${r.actor}|${r.trust_class}|${r.commit_sha}`))).toEqual(
      new Set([`schedule:${scheduleId}|trusted|${nightly.git.headSha}`]),
    );
    const first = await p.waitForRun(runs[0]?.id ?? "", nightly.token, (r) => r.status === "completed", 60_000);
    expect(first.outcome).toBe("success");
    expect(first.trigger).toBe("schedule");
    expect(first.jobs.map((j: any) => j.tier)).toEqual(["scheduled"]);
  });
});

/** The schedule list with next runs, the add form's field error, then an added schedule. */
async function schedulesJourney(page: Page): Promise<void> {
  await signIn(page, p.base, "dana", "/orgs/nightly/schedules");
  const list = page.getByTestId("schedule-list");
  await list.waitFor();
  const row = list.locator(`[data-schedule='${scheduleId}']`);
  expect(await row.textContent()).toContain("* * * * *");
  expect(await row.textContent()).toContain("Europe/Berlin");
  const next = row.getByTestId("next-runs").locator("li");
  expect(await next.count()).toBe(3);
  // A per-minute schedule: its next runs are seconds to three minutes away.
  for (const text of await next.allTextContents())
    expect(text).toMatch(/^(in \d+(s|m)|just now) · \d{1,2} \w{3} \d{4}, \d\d:\d\d$/);
  const form = page.getByTestId("add-schedule-form");
  await form.getByLabel("Cron").fill("0 3 * * *");
  await form.getByLabel("Time zone").fill("Moon/Base");
  await form.getByRole("button", { name: "Add schedule" }).click();
  await form.getByText('unknown time zone "Moon/Base"').waitFor();
  await form.getByLabel("Time zone").fill("Europe/Berlin");
  await form.getByRole("button", { name: "Add schedule" }).click();
  await page.getByRole("status").filter({ hasText: "Added 0 3 * * * (Europe/Berlin)" }).waitFor();
  expect(await list.locator("tbody tr").count()).toBe(2);
  await screenshot(page, "schedules");
}
