import { addMember } from "@kiln/engine";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { screenshot, signIn, TestBrowser, type Page } from "./support/browser.ts";
import { Platform } from "./support/platform.ts";

// The fleet page's admin half (issue 22) against `next start`, real PostgreSQL and Debian's
// Chromium: an org admin creates an org pool from the form (a duplicate is refused with
// POOL.EXISTS), creates a registration token (shown once, with the register command), and the
// token works: the agent's own `register` exchanges it and the host shows up in the fleet table live.
const p = new Platform({ KILN_DEV_LOGIN: "1", AUTH_SECRET: "e2e-only-session-secret-0123456789abcdef" });
let browser: TestBrowser;
let ada: Page;
let stateRoot = "";

beforeAll(async () => {
  await p.start();
  await p.seedTenant("acme", { ".kiln/workflow.yaml": 'version: 1\njobs:\n  - name: a\n    steps: ["true"]\n' });
  await addMember(p.db, { orgSlug: "acme", login: "ada", role: "admin", forgeId: 9_300_001 });
  stateRoot = await mkdtemp(path.join(os.tmpdir(), "kiln-fleet-admin-"));
  browser = await TestBrowser.launch();
  ada = await browser.page();
  await signIn(ada, p.base, "ada", "/orgs/acme/settings/fleet");
}, 240_000);

afterAll(async () => {
  await browser?.close();
  await p.stop();
  if (stateRoot) await rm(stateRoot, { recursive: true, force: true });
});

describe("the fleet page's pools and registration tokens in Chromium", () => {
  it("creates an org pool (a duplicate reads POOL.EXISTS) and a token shown once that registers a host", async () => {
    await ada.goto(`${p.base}/orgs/acme/settings/fleet`);
    const pools = ada.locator("#org-pools");
    await pools.getByText("No org pools yet").waitFor();
    // New pool, from the keyboard: type the name, Enter submits.
    const form = ada.getByRole("form", { name: "New pool" });
    await form.getByLabel("Pool name").fill("gpu");
    await form.getByLabel("Isolation").selectOption("process");
    await form.getByLabel("Pool name").press("Enter");
    await pools.getByTestId("pools-note").filter({ hasText: "Pool acme/gpu created." }).waitFor();
    const row = pools.locator('tr[data-pool="acme/gpu"]');
    await row.waitFor();
    expect(await row.locator('[data-field="isolation"]').textContent()).toBe("process");
    expect(await row.locator('[data-field="interruptible"]').textContent()).toBe("no");
    // The same name again: the server's refusal, inline, with its code.
    await form.getByLabel("Pool name").fill("gpu");
    await form.getByRole("button", { name: "Create pool" }).click();
    await form.getByRole("alert").filter({ hasText: "POOL.EXISTS" }).waitFor();
    expect(await form.getByRole("alert").textContent()).toContain("acme/gpu already exists");
    // The interruptible flag: serving itself is refused by the engine; serving default is taken.
    await row.getByRole("button", { name: "Interruptible settings of acme/gpu" }).click();
    const serves = row.getByLabel("On-demand pool acme/gpu serves");
    await serves.fill("acme/gpu");
    await serves.press("Enter");
    await row.getByText("POOL.INTERRUPTIBLE_REFUSED").waitFor();
    await serves.fill("default");
    await serves.press("Enter");
    await row.locator('[data-field="interruptible"]').filter({ hasText: "yes, serves default" }).waitFor();
    await row.getByRole("button", { name: "Clear the interruptible flag of acme/gpu" }).click();
    await row.locator('[data-field="interruptible"]').filter({ hasText: /^no$/ }).waitFor();

    // A registration token: shown once, with the command to run.
    const tokenForm = ada.getByRole("form", { name: "Create registration token" });
    await tokenForm.getByLabel("Pool").selectOption("acme/gpu");
    await tokenForm.getByLabel("Labels").fill("gpu,cuda12");
    await tokenForm.getByLabel("Expires in minutes").fill("30");
    await tokenForm.getByRole("button", { name: "Create registration token" }).click();
    const issued = ada.getByTestId("issued-token");
    await issued.waitFor();
    const token = (await issued.getByTestId("issued-token-value").textContent()) ?? "";
    expect(token).toMatch(/^kreg/);
    const command = (await issued.getByTestId("register-command").textContent()) ?? "";
    expect(command).toBe(
      `npm run agent -- register --url ${p.base} --token ${token} --pool acme/gpu --labels gpu,cuda12`,
    );
    await screenshot(ada, "fleet-registration-token");
    // Once: dismissed, it is gone, and a reload shows no token either.
    await issued.getByRole("button", { name: "Done, hide the token" }).click();
    await issued.waitFor({ state: "detached" });
    await ada.reload();
    await ada.locator('tr[data-pool="acme/gpu"]').waitFor();
    expect(await ada.content()).not.toContain(token);

    // The token works: the agent's own command, with the arguments the page gave.
    const dir = path.join(stateRoot, "gpu-1");
    const args = command.replace("npm run agent -- ", "").split(" ");
    const r = await p.agentCommand([...args, "--name", "gpu-1", "--state-dir", dir]);
    expect(r.code, r.out).toBe(0);
    expect(r.out).toContain("in pool acme/gpu of acme");
    p.startRegisteredAgent("gpu-1", dir);
    // Live: the fleet table shows it without a reload.
    const host = ada.locator('tr[data-host="gpu-1"]');
    await host.waitFor({ timeout: 30_000 });
    await host.locator('[data-field="state"]').filter({ hasText: "online" }).waitFor({ timeout: 30_000 });
  }, 180_000);
});
