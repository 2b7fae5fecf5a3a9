import { addMember, createAgentToken, createApiToken, setPoolInterruptible, setPoolPolicy } from "@kiln/engine";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { screenshot, signIn, TestBrowser, type Page } from "./support/browser.ts";
import { Platform, type Proc } from "./support/platform.ts";

// The fleet view and interruptible capacity (issue 22, docs/adr/0035) against `next start`, real
// PostgreSQL, host agents as OS processes and Debian's Chromium: a reclaim notice mid-job (SIGUSR2,
// and the operator API call) re-dispatches the job to on-demand capacity with cause host.reclaimed,
// shown apart on the run page and the fleet page; the fleet page's states and its actions.
const p = new Platform({ KILN_DEV_LOGIN: "1", AUTH_SECRET: "e2e-only-session-secret-0123456789abcdef" });
let browser: TestBrowser;
let ada: Page;
let t: Awaited<ReturnType<Platform["seedTenant"]>>;
let admin = "";

const WORKFLOW = 'version: 1\njobs:\n  - name: nightly\n    tier: background\n    steps: ["sleep 4", "echo done"]\n';
const STATS = { KILN_AGENT_STATS_MS: "300" };
// The page's fleet.list call, alone or in a tRPC batch with the page's other queries.
const FLEET_LIST = /\/api\/trpc\/[^?]*fleet\.list/;

async function agent(name: string, pool: "spot" | "default"): Promise<Proc> {
  const cred = await createAgentToken(p.db, { pool, orgSlug: "acme", name });
  return p.startAgent(name, cred.token, { ...STATS, KILN_HOSTNAME: name });
}

async function until<T>(what: string, f: () => Promise<T | null | undefined | false>, ms = 30_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}\n${p.logs().slice(-4000)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** The page's note after an action, or the action's error message as the failure. */
async function outcome(page: Page, text: string): Promise<void> {
  const err = page.getByTestId("fleet-error");
  await Promise.race([
    page.getByTestId("fleet-note").filter({ hasText: text }).waitFor(),
    err.waitFor().then(async () => {
      throw new Error(`the action failed: ${await err.textContent()}`);
    }),
  ]);
}

async function fleet(): Promise<any[]> {
  const r = await p.api("GET", "/v1/orgs/acme/fleet", admin);
  expect(r.status).toBe(200);
  return r.json.hosts;
}

async function startRun(key: string): Promise<string> {
  const r = await p.api(
    "POST",
    `/v1/repos/${t.repoId}/workflow-runs`,
    t.token,
    { workflow_path: ".kiln/workflow.yaml", commit_sha: t.git.headSha },
    { "idempotency-key": key },
  );
  expect(r.status).toBe(202);
  return r.json.run_id as string;
}

beforeAll(async () => {
  await p.start();
  t = await p.seedTenant("acme", { ".kiln/workflow.yaml": WORKFLOW });
  await addMember(p.db, { orgSlug: "acme", login: "ada", role: "admin", forgeId: 9_200_001 });
  admin = (await createApiToken(p.db, { orgSlug: "acme", role: "admin" })).token;
  await setPoolPolicy(p.db, { name: "spot", minIsolation: "process", development: true, actor: "e2e" });
  await setPoolInterruptible(p.db, { pool: "spot", interruptible: true, serves: "default", actor: "e2e", orgId: null });
  browser = await TestBrowser.launch();
  ada = await browser.page();
  await signIn(ada, p.base, "ada", "/orgs/acme/settings/fleet");
}, 240_000);

afterAll(async () => {
  await browser?.close();
  await p.stop();
});

describe("a reclaim notice mid-job", () => {
  it("SIGUSR2: the job re-dispatches to on-demand capacity with cause host.reclaimed, shown apart", async () => {
    const spot = await agent("spot-1", "spot");
    // The agent reports its stats before it runs anything.
    const reported = await until("spot-1's stats", async () =>
      (await fleet()).find((h) => h.name === "spot-1" && h.stats_at),
    );
    expect(reported).toMatchObject({
      pool: "spot",
      interruptible: true,
      state: "online",
      slots: { in_use: 0, total: 2 },
    });
    expect(reported.agent_version).toMatch(/kiln-host-agent/);
    expect(reported.warm_pool).toEqual({ size: 0, hits: 0, misses: 0 });
    const runId = await startRun("reclaim-sigusr2");
    await p.waitForRun(
      runId,
      t.token,
      (x) => x.jobs[0]?.attempts[0]?.host === "spot-1" && x.jobs[0]?.status === "running",
    );
    await new Promise((r) => setTimeout(r, 800)); // mid-step
    spot.child.kill("SIGUSR2");
    await until("the reclaimed agent to exit", async () => !spot.alive(), 15_000);
    const requeued = await p.waitForRun(runId, t.token, (x) => x.jobs[0]?.attempts[0]?.status === "completed", 15_000);
    expect(requeued.jobs[0].attempts[0]).toMatchObject({
      epoch: 1,
      outcome: "platform_failure",
      cause: "host.reclaimed",
    });
    // The session ended with the agent; the host reads offline and counts one reclaim, no failure.
    const gone = (await fleet()).find((h) => h.name === "spot-1");
    expect(gone).toMatchObject({ state: "offline", reclaims_last_hour: 1, platform_failures_last_hour: 0 });
    // On-demand capacity takes it (a second interruptible host would not: the job is excluded).
    await agent("spot-2", "spot");
    await new Promise((r) => setTimeout(r, 1500));
    expect((await p.waitForRun(runId, t.token, () => true)).jobs[0].attempts).toHaveLength(1);
    await agent("ondemand-1", "default");
    const done = await p.waitForRun(runId, t.token, (x) => x.status === "completed", 40_000);
    expect(done.outcome).toBe("success");
    expect(done.jobs[0].attempts.map((a: any) => [a.epoch, a.host, a.outcome, a.cause])).toEqual([
      [1, "spot-1", "platform_failure", "host.reclaimed"],
      [2, "ondemand-1", "success", null],
    ]);
    // The share: some of the pool's background minutes ran on interruptible capacity, one reclaim.
    const share = await p.api("GET", "/v1/orgs/acme/interruptible-share?pool=default", admin);
    expect(share.status).toBe(200);
    expect(share.json.pools[0]).toMatchObject({
      pool: "default",
      interruptible_pools: ["spot"],
      reclaims: 1,
      target: 0.55,
    });
    expect(share.json.pools[0].share).toBeGreaterThan(0);
    expect(share.json.pools[0].share).toBeLessThan(1);
    // The run page marks the reclaimed attempt apart from other platform failures.
    await ada.goto(`${p.base}/orgs/acme/runs/${runId}`);
    await ada.getByTestId("attempt-reclaimed").first().waitFor();
    await screenshot(ada, "run-reclaimed-attempt");
    // The fleet page shows the reclaim in its own column.
    await ada.goto(`${p.base}/orgs/acme/settings/fleet`);
    const row = ada.locator('tr[data-host="spot-1"]');
    await row.waitFor();
    expect(await row.locator('[data-field="reclaims"]').textContent()).toBe("1");
    expect(await row.locator('[data-field="failures"]').textContent()).toBe("0");
  }, 150_000);

  it("the operator API call: an idle interruptible host is told, exits, and its session ends", async () => {
    const hosts = await fleet();
    const spot2 = hosts.find((h) => h.name === "spot-2");
    expect(spot2?.state).toBe("online");
    const plain = hosts.find((h) => h.name === "ondemand-1");
    const refused = await p.api("POST", `/v1/pools/default/hosts/${plain.id}/reclaim`, admin);
    expect(refused).toMatchObject({ status: 409, json: { error: { code: "POOL.NOT_INTERRUPTIBLE" } } });
    const member = await p.api("POST", `/v1/pools/spot/hosts/${spot2.id}/reclaim`, t.token);
    expect(member.status).toBe(403);
    const r = await p.api("POST", `/v1/pools/spot/hosts/${spot2.id}/reclaim`, admin);
    expect(r).toMatchObject({ status: 202, json: { runner_id: spot2.id, name: "spot-2", sessions: 1 } });
    await until("spot-2 to exit", async () => !p.proc("spot-2").alive(), 15_000);
    await until("spot-2 offline", async () =>
      (await fleet()).find((h) => h.name === "spot-2" && h.state === "offline"),
    );
  }, 60_000);
});

describe("the fleet page in Chromium", () => {
  it("loads, errs and recovers, updates live, and drains, quarantines and revokes from the keyboard", async () => {
    // Loading, then an error at the network edge, then "Try again".
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    await ada.route(FLEET_LIST, async (route) => {
      await gate;
      await route.continue().catch(() => undefined);
    });
    await ada.goto(`${p.base}/orgs/acme/settings/fleet`);
    await ada.getByRole("status").filter({ hasText: "Loading hosts" }).waitFor();
    release();
    await ada.unroute(FLEET_LIST);
    await ada.locator('tr[data-host="ondemand-1"]').waitFor();
    await ada.route(FLEET_LIST, (route) => route.abort("failed"));
    await ada.goto(`${p.base}/orgs/acme/settings/fleet`);
    const alert = ada.getByRole("alert").filter({ hasText: "Could not load hosts" });
    await alert.waitFor();
    await ada.unroute(FLEET_LIST);
    await alert.getByRole("button", { name: "Try again" }).click();
    await ada.locator('tr[data-host="ondemand-1"]').waitFor();
    const row = ada.locator('tr[data-host="ondemand-1"]');
    expect(await row.locator('[data-field="agent-version"]').textContent()).toMatch(/kiln-host-agent/);
    expect(await row.locator('[data-field="warm-pool"]').textContent()).toContain("0 ready");
    // Live: a host that connects shows up without a reload.
    await agent("ondemand-2", "default");
    await ada.locator('tr[data-host="ondemand-2"]').waitFor({ timeout: 20_000 });
    // Drain, from the keyboard.
    const target = ada.locator('tr[data-host="ondemand-2"]');
    await target.getByRole("button", { name: "Drain" }).focus();
    await ada.keyboard.press("Enter");
    await outcome(ada, "drain done");
    expect(await target.locator('[data-field="state"]').textContent()).toContain("draining");
    // Quarantine asks for a reason; Enter submits.
    await target.getByRole("button", { name: "Quarantine" }).focus();
    await ada.keyboard.press("Enter");
    await ada.getByLabel("Why quarantine ondemand-2").fill("disk errors");
    await ada.keyboard.press("Enter");
    await target.locator('[data-field="quarantine-reason"]').filter({ hasText: "disk errors" }).waitFor();
    await screenshot(ada, "fleet-page");
    // Revoke asks to confirm first.
    await target.getByRole("button", { name: "Revoke" }).click();
    await target.getByText("Its running jobs are retried elsewhere").waitFor();
    await target.getByRole("button", { name: "Confirm revoke of ondemand-2" }).click();
    await outcome(ada, "revoke done");
    await target.locator('[data-field="state"]').filter({ hasText: "revoked" }).waitFor();
    await until("ondemand-2's credential to die", async () => {
      const h = (await fleet()).find((x) => x.name === "ondemand-2");
      return h?.state === "revoked";
    });
    // Another org's admin sees none of acme's hosts.
    const other = await p.api("GET", "/v1/orgs/newco/fleet", admin);
    expect(other.status).toBe(404);
  }, 120_000);
});
