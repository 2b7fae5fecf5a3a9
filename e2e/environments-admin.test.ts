import { addMember } from "@kiln/engine";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { screenshot, signIn, TestBrowser, type Page } from "./support/browser.ts";
import { Platform } from "./support/platform.ts";

// The environments dashboard's admin forms (issue 18) in Debian's Chromium against `next start` and
// real PostgreSQL: an admin creates staging with the form, edits its gate policy (a refusal shows
// the server's POLICY.INVALID, a valid edit becomes version 2), sets a deploy variable, and the org
// home shows the recent-overrides card's empty state. Promotions themselves are e2e/environments.test.ts.
const p = new Platform({ KILN_DEV_LOGIN: "1", AUTH_SECRET: "e2e-only-session-secret-0123456789abcdef" });
let browser: TestBrowser;
let ada: Page;

beforeAll(async () => {
  await p.start();
  await p.seedTenant(
    "acme",
    { ".kiln/workflow.yaml": 'version: 1\njobs:\n  - name: a\n    steps: ["true"]\n' },
    { member: "dev" },
  );
  await addMember(p.db, { orgSlug: "acme", login: "ada", role: "admin", forgeId: 9_200_001 });
  browser = await TestBrowser.launch();
  ada = await browser.page();
  await signIn(ada, p.base, "ada", "/orgs/acme/environments");
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await p.stop();
});

describe("environments dashboard, admin", () => {
  it("creates staging with the form, edits its policy (refusal then version 2), sets a variable", async () => {
    await ada.getByText("No environments").waitFor();
    const form = ada.getByRole("form", { name: "New environment" });
    // A name the domain refuses comes back from the server, shown inline with its code.
    await form.getByLabel("Name").fill("Bad Name!");
    await form.getByRole("button", { name: "Create environment" }).click();
    await form.getByRole("alert").filter({ hasText: "ENV.INVALID" }).waitFor();
    await form.getByLabel("Name").fill("staging");
    await form.getByRole("button", { name: "Create environment" }).focus();
    await ada.keyboard.press("Enter");
    await form.getByRole("status").filter({ hasText: "Created staging" }).waitFor();
    // Live: the list shows it without a reload.
    const link = ada.getByTestId("environments").getByRole("link", { name: /staging/ });
    await link.waitFor();
    await link.click();

    const policy = ada.getByRole("form", { name: "Edit the gate policy" });
    await ada.getByTestId("policy-version").filter({ hasText: "Version 1" }).waitFor();
    const textarea = policy.getByLabel("Policy (JSON)");
    const original = await textarea.inputValue();
    expect(JSON.parse(original)).toBeTypeOf("object");
    await textarea.fill("{not json");
    await policy.getByRole("button", { name: "Save as new version" }).click();
    await policy.getByRole("alert").filter({ hasText: "not JSON" }).waitFor();
    await textarea.fill('{"gates": 5}');
    await policy.getByRole("button", { name: "Save as new version" }).click();
    const refusal = policy.getByRole("alert").filter({ hasText: "POLICY.INVALID" });
    await refusal.filter({ hasText: "gates" }).waitFor();
    await textarea.fill(`${original}\n`);
    await policy.getByRole("button", { name: "Save as new version" }).click();
    await policy.getByRole("status").filter({ hasText: "Saved as version 2" }).waitFor();
    await ada.getByTestId("policy-version").filter({ hasText: "Version 2" }).waitFor();

    const vars = ada.getByRole("form", { name: "Set a variable" });
    await vars.getByLabel("Variable name").fill("API_URL");
    await vars.getByLabel("Variable value").fill("https://staging.example");
    await vars.getByRole("button", { name: "Set variable" }).click();
    const row = ada.locator('[data-variable="API_URL"]');
    await row.filter({ hasText: "https://staging.example" }).waitFor();
    await screenshot(ada, "environment-admin");
  }, 120_000);

  it("the org home shows the recent-overrides card's empty state", async () => {
    await ada.goto(`${p.base}/orgs/acme`);
    const card = ada.locator("#recent-overrides");
    await card.getByText("No overrides").waitFor();
  }, 60_000);
});
