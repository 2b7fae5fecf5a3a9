import { addMember, KekSource, listAuditEvents, secretEnvelope, setSecret, targetBySlug } from "@kiln/engine";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { screenshot, signIn, TestBrowser, type Page } from "./support/browser.ts";
import { Platform } from "./support/platform.ts";

// Settings > Secrets and the audit trail page (issue 16), black box in Debian's Chromium: an admin
// sets secrets with the keyboard (write-only values: the page never shows one), replaces and
// deletes them, sees the changes in the audit trail with its filters; an auditor reads the trail
// but not the secrets; a member is refused both by the server. No host agent: nothing runs a job.
const p = new Platform({ KILN_DEV_LOGIN: "1", AUTH_SECRET: "e2e-only-session-secret-0123456789abcdef" });
let browser: TestBrowser;
let admin: Page;
const VALUE = "dashboard-Secret-Value-77";

beforeAll(async () => {
  await p.start();
  await p.seedTenant(
    "vault",
    { ".kiln/workflow.yaml": 'version: 1\njobs:\n  - name: a\n    steps: ["true"]\n' },
    { member: "dev" },
  );
  await addMember(p.db, { orgSlug: "vault", login: "ada", role: "admin", forgeId: 8_200_001 });
  await addMember(p.db, { orgSlug: "vault", login: "aud", role: "auditor", forgeId: 8_200_002 });
  browser = await TestBrowser.launch();
  admin = await browser.page();
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await p.stop();
});

const secretRow = (page: Page, key: string) => page.locator(`[data-testid='secrets-table'] tr[data-secret='${key}']`);

describe("secrets dashboard", { timeout: 120_000 }, () => {
  it("an admin sets, replaces and deletes secrets; values are write-only; the trail records each change", async () => {
    await signIn(admin, p.base, "ada", "/orgs/vault/settings");
    await admin.getByRole("link", { name: "Secrets" }).click();
    await admin.waitForURL((u) => u.pathname === "/orgs/vault/settings/secrets");
    await admin.getByText("No secrets", { exact: true }).waitFor();

    const form = admin.getByTestId("set-secret-form");
    // Client-side and server-side validation, beside their fields.
    await form.getByRole("button", { name: "Save secret" }).click();
    await form.getByText("enter a name").waitFor();
    await form.getByLabel("Name").fill("KILN_NOPE");
    await form.getByLabel("Value").fill("x");
    await form.getByLabel("Value").press("Enter");
    await form.getByText("must not start with KILN_ (reserved for the platform)").waitFor();
    expect(await form.getByLabel("Name").getAttribute("aria-invalid")).toBe("true");

    // With the keyboard: type, Enter submits; the value field is a password input and is cleared.
    expect(await form.getByLabel("Value").getAttribute("type")).toBe("password");
    await form.getByLabel("Name").fill("DEPLOY_TOKEN");
    await form.getByLabel("Value").fill(VALUE);
    await form.getByLabel("Value").press("Enter");
    await form.getByText("Saved DEPLOY_TOKEN as version 1.", { exact: false }).waitFor();
    expect(await form.getByLabel("Value").inputValue()).toBe("");
    await secretRow(admin, "org:DEPLOY_TOKEN").waitFor();

    // A repo-scoped one, then a new version of the first.
    await form.getByLabel("Name").fill("REPO_KEY");
    await form.getByLabel("Scope").selectOption({ label: "vault/app" });
    await form.getByLabel("Value").fill("repo-value-123");
    await form.getByRole("button", { name: "Save secret" }).click();
    await form.getByText("Saved REPO_KEY as version 1.", { exact: false }).waitFor();
    await form.getByLabel("Name").fill("DEPLOY_TOKEN");
    await form.getByLabel("Scope").selectOption("org");
    await form.getByLabel("Value").fill(`${VALUE}-2`);
    await form.getByLabel("Value").press("Enter");
    await secretRow(admin, "org:DEPLOY_TOKEN").getByText("v2").waitFor();
    expect(await secretRow(admin, "org:DEPLOY_TOKEN").locator("td").nth(3).textContent()).toBe("web:ada");
    const repoRow = admin.locator("[data-testid='secrets-table'] tr[data-secret^='repo:']");
    expect(await repoRow.locator("td").nth(1).textContent()).toBe("vault/app");

    // The page never received a value: nothing in the DOM, and the stored envelope opens to the new one only.
    expect(await admin.content()).not.toContain(VALUE);
    const target = await targetBySlug(p.db, "vault");
    expect((await secretEnvelope(p.db, { target, name: "DEPLOY_TOKEN" })).version).toBe(2);
    await screenshot(admin, "secrets");

    await admin.getByRole("button", { name: "Delete REPO_KEY (vault/app)" }).click();
    await admin.getByText("Deleted REPO_KEY (was version 1).", { exact: false }).waitFor();
    expect(await repoRow.count()).toBe(0);
    expect(await admin.evaluate(() => document.activeElement?.id)).toBe("secrets-heading");

    // The audit trail: all kinds, newest first, then filtered to deletes.
    await admin.getByRole("link", { name: "audit trail" }).click();
    await admin.waitForURL((u) => u.pathname === "/orgs/vault/audit");
    const rows = admin.locator("[data-testid='audit-table'] tbody tr");
    await rows.first().waitFor();
    // Seeding the org connected its repo and added members and tokens: those are on the trail too.
    const kinds = await rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute("data-kind")));
    expect(kinds.filter((k) => k?.startsWith("secret."))).toEqual([
      "secret.delete",
      "secret.set",
      "secret.set",
      "secret.set",
    ]);
    await admin.getByLabel("Kind").selectOption({ label: "Secret deleted" });
    await admin.getByRole("button", { name: "Apply" }).click();
    await admin.waitForFunction(() => document.querySelectorAll("[data-testid='audit-table'] tbody tr").length === 1);
    expect(await rows.first().textContent()).toContain("name=REPO_KEY");
    await screenshot(admin, "audit-trail");
    const stored = await listAuditEvents(p.db, { orgSlug: "vault", kind: "secret." });
    expect(stored.map((e) => e.actor)).toEqual(["web:ada", "web:ada", "web:ada", "web:ada"]);
    expect(JSON.stringify(stored)).not.toContain(VALUE);
  });

  it("the trail shows changes made elsewhere without a reload (live)", async () => {
    await admin.getByLabel("Kind").selectOption({ label: "All kinds" });
    await admin.getByRole("button", { name: "Apply" }).click();
    const rows = admin.locator("[data-testid='audit-table'] tbody tr");
    // Every event of the org so far (the seed's own and the four secret changes), then one more.
    const before = (await listAuditEvents(p.db, { orgSlug: "vault" })).length;
    await admin.waitForFunction(
      (n) => document.querySelectorAll("[data-testid='audit-table'] tbody tr").length === n,
      before,
    );
    // A change from the CLI's use case (another process), not from this page.
    const target = await targetBySlug(p.db, "vault");
    await setSecret(p.db, new KekSource(p.kekFile), { target, name: "FROM_CLI", value: "v-cli-1", actor: "cli:ops" });
    await admin.waitForFunction(
      (n) => document.querySelectorAll("[data-testid='audit-table'] tbody tr").length === n,
      before + 1,
      { timeout: 15_000 },
    );
    expect(await rows.first().getAttribute("data-kind")).toBe("secret.set");
    expect(await rows.first().textContent()).toContain("cli:ops");
  });

  it("an auditor reads the trail but not the secrets; a member is refused both by the server", async () => {
    const other = await TestBrowser.launch();
    const third = await TestBrowser.launch();
    try {
      const aud = await other.page();
      await signIn(aud, p.base, "aud", "/orgs/vault/audit");
      await aud.locator("[data-testid='audit-table'] tbody tr").first().waitFor();
      await aud.goto(`${p.base}/orgs/vault/settings/secrets`);
      await aud.getByText("Admins only").waitFor();
      const dev = await third.page();
      await signIn(dev, p.base, "dev", "/orgs/vault/audit");
      await dev.getByText("Admins and auditors only").waitFor();
      const res = await dev.evaluate(async () => {
        const list = await fetch(
          `/api/trpc/secrets.list?input=${encodeURIComponent(JSON.stringify({ org: "vault" }))}`,
        );
        const trail = await fetch(`/api/trpc/audit.list?input=${encodeURIComponent(JSON.stringify({ org: "vault" }))}`);
        const set = await fetch("/api/trpc/secrets.set", {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ org: "vault", repoId: null, name: "EVIL", value: "x" }),
        });
        return [list.status, trail.status, set.status];
      });
      expect(res).toEqual([403, 403, 403]);
    } finally {
      await other.close();
      await third.close();
    }
  });
});
