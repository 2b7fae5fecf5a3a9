import { addMember, setPlatformAdmin } from "@kiln/engine";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { screenshot, signIn, TestBrowser, type Page } from "./support/browser.ts";
import { Platform } from "./support/platform.ts";

// The org admin's settings journey (issue 9 admin UI), black box: `next start`, real PostgreSQL and
// Debian's Chromium. No host agent: nothing here runs a job.
const p = new Platform({ KILN_DEV_LOGIN: "1", AUTH_SECRET: "e2e-only-session-secret-0123456789abcdef" });
let browser: TestBrowser;
let admin: Page;

beforeAll(async () => {
  await p.start();
  await p.seedTenant(
    "acme",
    { ".kiln/workflow.yaml": 'version: 1\njobs:\n  - name: a\n    steps: ["true"]\n' },
    { member: "dev" },
  );
  await addMember(p.db, { orgSlug: "acme", login: "ada", role: "admin", forgeId: 8_100_001 });
  // Shared capacity is set by platform operators (docs/scheduling.md): ada is one, olga only an org admin.
  await setPlatformAdmin(p.db, { login: "ada", admin: true });
  await addMember(p.db, { orgSlug: "acme", login: "olga", role: "admin", forgeId: 8_100_002 });
  browser = await TestBrowser.launch();
  admin = await browser.page();
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await p.stop();
});

const row = (page: Page, pool: string) => page.locator(`[data-testid='capacity-table'] tr[data-pool='${pool}']`);
const cellText = async (page: Page, pool: string, field: string) =>
  (await row(page, pool).locator(`[data-field='${field}']`).textContent())?.trim();

describe("org settings", { timeout: 120_000 }, () => {
  it("a platform admin sets an entitlement and edits the egress allow-list; the changes survive a reload and are audited", async () => {
    await signIn(admin, p.base, "ada", "/orgs/acme");
    await admin.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Settings" }).click();
    await admin.waitForURL((u) => u.pathname === "/orgs/acme/settings");
    await admin.getByText("No entitlements yet").waitFor();
    await admin.getByText("No hosts allowed").waitFor();

    // Add a pool with the keyboard: Enter submits.
    const add = admin.getByTestId("add-pool-form");
    await add.getByLabel("Pool").fill("default");
    await add.getByLabel("Slots").fill("4");
    await add.getByLabel("Weight").fill("2");
    await add.getByLabel("Weight").press("Enter");
    await row(admin, "default").waitFor();
    expect([
      await cellText(admin, "default", "slots"),
      await cellText(admin, "default", "weight"),
      await cellText(admin, "default", "hard_cap"),
    ]).toEqual(["4", "2", "none"]);

    // Edit in place: the server's validation message appears beside the field, then a valid save.
    await admin.getByRole("button", { name: "Edit default" }).click();
    await admin.getByLabel("Slots for default").fill("9");
    await admin.getByLabel("Hard cap for default").fill("4");
    await admin.getByLabel("Hard cap for default").press("Enter");
    await admin.getByText("must be at least the slots, or empty for no cap").waitFor();
    expect(await admin.getByLabel("Hard cap for default").getAttribute("aria-invalid")).toBe("true");
    await admin.getByLabel("Hard cap for default").fill("12");
    await admin.getByRole("button", { name: "Save" }).click();
    await admin.locator("[data-testid='capacity-table'] [data-field='slots']").filter({ hasText: "9" }).waitFor();
    expect(await admin.evaluate(() => document.activeElement?.getAttribute("aria-label"))).toBe("Edit default");

    // Egress: the domain's pattern error inline, then add two hosts and remove one.
    const allow = admin.getByTestId("allow-host-form");
    await allow.getByLabel("Host pattern").fill("*.com");
    await allow.getByLabel("Host pattern").press("Enter");
    await allow.getByText("a wildcard must keep at least two labels").waitFor();
    await allow.getByLabel("Host pattern").fill("Registry.NPMjs.org");
    await allow.getByRole("button", { name: "Allow host" }).click();
    await allow.getByText("Allowed registry.npmjs.org.").waitFor();
    await allow.getByLabel("Host pattern").fill("*.github.com");
    await allow.getByLabel("Host pattern").press("Enter");
    await admin.locator("[data-testid='egress-list'] [data-pattern='*.github.com']").waitFor();
    await admin.getByRole("button", { name: "Remove *.github.com" }).click();
    await admin.locator("[data-testid='egress-list'] [data-pattern='*.github.com']").waitFor({ state: "detached" });
    await admin.getByText("Removed *.github.com.").waitFor();
    expect(await admin.evaluate(() => document.activeElement?.getAttribute("name"))).toBe("pattern");
    await screenshot(admin, "org-settings");

    await admin.reload();
    await row(admin, "default").waitFor();
    expect([
      await cellText(admin, "default", "slots"),
      await cellText(admin, "default", "weight"),
      await cellText(admin, "default", "hard_cap"),
    ]).toEqual(["9", "2", "12"]);
    expect(
      await admin
        .locator("[data-testid='egress-list'] [data-pattern]")
        .evaluateAll((els) => els.map((e) => e.getAttribute("data-pattern"))),
    ).toEqual(["registry.npmjs.org"]);
    const changes = (await admin.getByTestId("recent-changes").textContent()) ?? "";
    expect(changes).toContain("removed egress to *.github.com");
    expect(changes).toContain("set pool default to 9 slots, weight 2, cap 12 (was 4 slots, weight 2, no cap)");

    const audit = await p.db.$queryRaw<{ n: number }[]>`
      SELECT ((SELECT count(*) FROM entitlement_change WHERE actor = 'web:ada (platform admin)') + (SELECT count(*) FROM egress_rule_change WHERE actor = 'web:ada'))::int AS n`;
    expect(audit[0]?.n).toBe(5); // 2 entitlement saves + allow, allow, remove; the refused inputs wrote nothing
  });

  it("an org admin sees capacity read-only, may lower its hard cap, and is refused raising it", async () => {
    const other = await TestBrowser.launch();
    try {
      const olga = await other.page();
      await signIn(olga, p.base, "olga", "/orgs/acme/settings");
      await row(olga, "default").waitFor();
      await olga.getByText("Slots, weight and raising the cap are set by platform operators.").waitFor();
      expect(await olga.getByRole("button", { name: "Edit default" }).count()).toBe(0);
      expect(await olga.getByTestId("add-pool-form").count()).toBe(0);
      await olga.getByRole("button", { name: "Lower the hard cap of default" }).click();
      await olga.getByLabel("Hard cap for default").fill("10");
      await olga.getByRole("button", { name: "Lower cap" }).click();
      await row(olga, "default").locator("[data-field='hard_cap']").filter({ hasText: "10" }).waitFor();
      const res = await olga.evaluate(async () => {
        const r = await fetch("/api/trpc/tenants.setEntitlement", {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ org: "acme", pool: "default", slots: 10_000, weight: 1000, hardCap: null }),
        });
        return { status: r.status, body: (await r.json()) as { error?: { data?: { domainCode?: string } } } };
      });
      expect(res.status).toBe(403);
      expect(res.body.error?.data?.domainCode).toBe("ENTITLEMENT.PLATFORM_ADMIN_REQUIRED");
      const rows = await p.db.$queryRaw<{ actor: string; before: unknown; after: unknown }[]>`
        SELECT actor, before, after FROM entitlement_change WHERE actor = 'web:olga'`;
      expect(rows).toEqual([
        {
          actor: "web:olga",
          before: { slots: 9, weight: 2, hard_cap: 12 },
          after: { slots: 9, weight: 2, hard_cap: 10 },
        },
      ]);
    } finally {
      await other.close();
    }
  });

  it("a member sees the settings read-only and is refused by the server", async () => {
    const other = await TestBrowser.launch();
    try {
      const dev = await other.page();
      await signIn(dev, p.base, "dev", "/orgs/acme/settings");
      await dev.getByTestId("read-only-note").waitFor();
      await row(dev, "default").waitFor();
      expect(await dev.getByRole("button", { name: "Edit default" }).count()).toBe(0);
      expect(await dev.getByRole("button", { name: /^Remove / }).count()).toBe(0);
      expect(await dev.getByTestId("allow-host-form").count()).toBe(0);
      const res = await dev.evaluate(async () => {
        const r = await fetch("/api/trpc/tenants.allowEgressHost", {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ org: "acme", pattern: "evil.example.com" }),
        });
        return { status: r.status, body: (await r.json()) as { error?: { data?: { code?: string } } } };
      });
      expect(res.status).toBe(403);
      expect(res.body.error?.data?.code).toBe("FORBIDDEN");
    } finally {
      await other.close();
    }
  });
});
