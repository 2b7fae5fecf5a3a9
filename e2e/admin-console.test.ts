import { createHmac, randomUUID } from "node:crypto";
import { addMember, createOrg, listAuditEvents } from "@kiln/engine";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { screenshot, signIn, TestBrowser, type Page } from "./support/browser.ts";
import { Platform } from "./support/platform.ts";

// The admin console (issue 19) in Debian's Chromium against `next start` and real PostgreSQL:
// repositories, members and API tokens, each with its loading, empty and error states, keyboard
// use, live updates, the server's refusals shown where they belong, and the audit trail behind it.
// Loading and error states are produced at the browser's network edge (a held or failed request to
// the page's own tRPC call); everything behind it is the real platform.
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
  await addMember(p.db, { orgSlug: "acme", login: "ada", role: "admin", forgeId: 9_100_001 });
  // An org with nothing in it yet: its pages show their empty states.
  await createOrg(p.db, "newco");
  await addMember(p.db, { orgSlug: "newco", login: "nina", role: "admin", forgeId: 9_100_002 });
  browser = await TestBrowser.launch();
  ada = await browser.page();
  await signIn(ada, p.base, "ada", "/orgs/acme/settings");
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await p.stop();
});

/** Holds the page's tRPC call for `procedure` until the returned release() is called. */
async function hold(page: Page, procedure: string): Promise<() => Promise<void>> {
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  await page.route(`**/api/trpc/${procedure}**`, async (route) => {
    await gate;
    // The page may have given up on the request meanwhile (a refetch replaced it): nothing to continue then.
    await route.continue().catch((e: unknown) => {
      if (!/already handled|closed/i.test(String(e))) throw e;
    });
  });
  return async () => {
    release();
    await page.unroute(`**/api/trpc/${procedure}**`);
  };
}

/** Loading, then error (the call fails at the network), then "Try again" recovers: for one page. */
async function loadingAndErrorStates(page: Page, url: string, procedure: string, what: string): Promise<void> {
  const release = await hold(page, procedure);
  await page.goto(url);
  await page
    .getByRole("status")
    .filter({ hasText: `Loading ${what}` })
    .waitFor();
  await release();
  await page
    .getByRole("status")
    .filter({ hasText: `Loading ${what}` })
    .waitFor({ state: "detached" });
  await page.route(`**/api/trpc/${procedure}**`, (route) => route.abort("failed"));
  await page.goto(url);
  const alert = page.getByRole("alert").filter({ hasText: `Could not load ${what}` });
  await alert.waitFor();
  await page.unroute(`**/api/trpc/${procedure}**`);
  await alert.getByRole("button", { name: "Try again" }).click();
  await alert.waitFor({ state: "detached" });
}

function signedPing(fullName: string, secret: string) {
  const body = JSON.stringify({ zen: "Keep it logically awesome.", hook_id: 1, repository: { full_name: fullName } });
  return fetch(`${p.base}/v1/webhooks/github`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "x-github-event": "ping",
      "x-github-delivery": randomUUID(),
      "x-hub-signature-256": `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`,
    },
    body,
  });
}

describe("admin console", { timeout: 150_000 }, () => {
  it("repositories: empty, connect (secret once, refusal inline), last delivery live, disconnect; loading and error", async () => {
    const other = await TestBrowser.launch();
    try {
      const nina = await other.page();
      await signIn(nina, p.base, "nina", "/orgs/newco/settings");
      await nina.getByTestId("admin-links").getByRole("link", { name: "Repositories" }).click();
      await nina.waitForURL((u) => u.pathname === "/orgs/newco/settings/repos");
      await nina.getByText("No repositories").waitFor();

      // A clone URL outside the source policy: the engine's reason, under the field.
      const form = nina.getByTestId("connect-repo-form");
      await form.getByLabel("Repository").fill("newco/site");
      await form.getByLabel("Clone URL").fill("ftp://example.com/site.git");
      await form.getByLabel("Clone URL").press("Enter");
      const urlField = form.getByLabel("Clone URL");
      await nina.waitForFunction(
        () =>
          document
            .querySelector("[data-testid=connect-repo-form] input[name=cloneUrl]")
            ?.getAttribute("aria-invalid") === "true",
      );
      expect(await urlField.getAttribute("aria-invalid")).toBe("true");
      expect(await nina.locator("[data-repo]").count()).toBe(0);

      await urlField.fill("https://github.com/newco/site.git");
      await urlField.press("Enter");
      const secretPanel = nina.getByTestId("webhook-secret");
      await secretPanel.waitFor();
      const secret = ((await nina.getByTestId("webhook-secret-value").textContent()) ?? "").trim();
      expect(secret).toMatch(/^whsec_/);
      expect(await nina.getByTestId("webhook-url").textContent()).toBe(`${p.base}/v1/webhooks/github`);
      // The secret's heading takes focus: the next thing to do is to copy it.
      // (Focus moves once the panel has rendered: wait for it rather than sample it.)
      await nina.waitForFunction(() => document.activeElement?.id === "webhook-secret-title");
      expect(await nina.evaluate(() => document.activeElement?.id)).toBe("webhook-secret-title");
      const row = nina.locator("[data-repo='newco/site']");
      expect((await row.locator("[data-field=last-delivery]").textContent())?.trim()).toBe("none yet");
      expect(await row.locator("[data-field=forge-credential]").textContent()).toContain("None");
      await screenshot(nina, "admin-repos");

      // Shown once: a reload lists the repo, never its secret.
      await nina.reload();
      await row.waitFor();
      expect(await nina.content()).not.toContain(secret);

      // The forge pings the hook: the row shows it without a reload (the page refreshes itself).
      expect((await signedPing("newco/site", secret)).status).toBe(200);
      await row.locator("[data-field=last-delivery]").filter({ hasText: "ping ignored" }).waitFor({ timeout: 15_000 });

      // Disconnect with the keyboard: the confirmation takes focus, Enter confirms.
      await nina.getByRole("button", { name: "Disconnect newco/site" }).press("Enter");
      await nina.keyboard.press("Enter");
      await nina.getByRole("status").filter({ hasText: "Disconnected newco/site" }).waitFor();
      await row.locator("[data-field=state]").filter({ hasText: "disconnected" }).waitFor();
      const ping = await signedPing("newco/site", secret);
      expect(((await ping.json()) as { ignored?: string }).ignored).toBe("repo is disconnected");

      const audit = await listAuditEvents(p.db, { orgSlug: "newco", kind: "repo." });
      expect(audit.map((e) => [e.kind, e.actor, e.subject])).toEqual([
        ["repo.connected", "web:nina", "newco/site"],
        ["repo.disconnected", "web:nina", "newco/site"],
      ]);
      await loadingAndErrorStates(nina, `${p.base}/orgs/newco/settings/repos`, "repos.list", "repositories");
      await row.waitFor();
    } finally {
      await other.close();
    }
  });

  it("members: add by forge id (inline errors), change a role with the keyboard, the last admin is refused, remove; loading and error", async () => {
    await ada.goto(`${p.base}/orgs/acme/settings/members`);
    await ada.locator("[data-login='ada']").waitFor();
    const form = ada.getByTestId("add-member-form");
    await form.getByLabel("Login").fill("grace");
    await form.getByLabel("Login").press("Enter");
    await form.getByText("enter the forge's numeric user id").waitFor();
    await form.getByLabel("Forge user id").fill("9100003");
    await form.getByLabel("Role").selectOption("auditor");
    await form.getByLabel("Forge user id").press("Enter");
    await ada.getByRole("status").filter({ hasText: "grace is now auditor." }).waitFor();
    const grace = ada.locator("[data-login='grace']");
    expect(await grace.locator("td").nth(1).textContent()).toBe("9100003");

    // Keyboard: focus grace's role and pick "member" with the arrow key.
    const role = ada.getByLabel("Role of grace");
    await role.focus();
    await role.selectOption("member");
    await ada.getByRole("status").filter({ hasText: "grace is now member." }).waitFor();

    // ada is acme's only admin: demoting her is refused by the server, and the select snaps back.
    await ada.getByLabel("Role of ada").selectOption("auditor");
    await ada.getByRole("alert").filter({ hasText: "last admin" }).waitFor();
    await ada.waitForFunction(
      () => (document.querySelector("[aria-label='Role of ada']") as HTMLSelectElement | null)?.value === "admin",
    );
    const adaRole = await p.db.$queryRaw<{ role: string }[]>`
      SELECT m.role FROM membership m JOIN app_user u ON u.id = m.user_id JOIN org o ON o.id = m.org_id
      WHERE o.slug = 'acme' AND u.login = 'ada'`;
    expect(adaRole[0]?.role).toBe("admin");
    await screenshot(ada, "admin-members");

    // Remove grace: confirm, and she is gone from the list and from the org.
    await ada.getByRole("button", { name: "Remove grace" }).click();
    await ada.getByRole("button", { name: "Confirm removal of grace" }).click();
    await grace.waitFor({ state: "detached" });
    expect(await ada.evaluate(() => document.activeElement?.id)).toBe("members-heading");
    const audit = await listAuditEvents(p.db, { orgSlug: "acme", kind: "member." });
    expect(audit.filter((e) => e.actor === "web:ada").map((e) => [e.kind, e.subject])).toEqual([
      ["member.added", "grace"],
      ["member.role_changed", "grace"],
      ["member.removed", "grace"],
    ]);
    await loadingAndErrorStates(ada, `${p.base}/orgs/acme/settings/members`, "members.list", "members");
    await ada.locator("[data-login='ada']").waitFor();
  });

  it("tokens: empty, create with role and expiry (shown once, works), revoke; loading and error", async () => {
    const other = await TestBrowser.launch();
    try {
      const nina = await other.page();
      await signIn(nina, p.base, "nina", "/orgs/newco/settings/tokens");
      await nina.getByText("No API tokens").waitFor();
      const form = nina.getByTestId("create-token-form");
      await form.getByLabel("Name").fill("deploy-bot");
      await form.getByLabel("Role").selectOption("auditor");
      await form.getByLabel("Expires in (days)").fill("400");
      await form.getByLabel("Expires in (days)").press("Enter");
      await form.locator("[aria-invalid=true]").waitFor();
      await form.getByLabel("Expires in (days)").fill("30");
      await form.getByLabel("Expires in (days)").press("Enter");
      await nina.getByTestId("new-token").waitFor();
      const token = ((await nina.getByTestId("new-token-value").textContent()) ?? "").trim();
      expect(token).toMatch(/^kiln_/);
      const row = nina.locator("[data-testid=api-tokens] tr", { hasText: "deploy-bot" });
      expect((await row.locator("td").nth(1).textContent())?.trim()).toBe("auditor");
      expect((await row.getByTestId("token-state").textContent())?.trim()).toBe("active");

      // It works at once, as an auditor of newco; last use shows on the page (refreshed live).
      expect((await p.api("GET", "/v1/orgs/newco/repos", token)).status).toBe(200);
      expect((await p.api("GET", "/v1/orgs/acme/repos", token)).status).toBe(404);
      await nina.getByRole("button", { name: "I have copied it" }).click();
      await nina.reload();
      await row.waitFor();
      expect(await nina.content()).not.toContain(token);
      expect((await row.locator("td").nth(4).textContent())?.trim()).not.toBe("never");
      await screenshot(nina, "admin-tokens");

      await row.getByRole("button", { name: "Revoke deploy-bot" }).click();
      await nina.getByRole("status").filter({ hasText: "Revoked deploy-bot" }).waitFor();
      expect((await p.api("GET", "/v1/orgs/newco/repos", token)).json.error.code).toBe("AUTH.TOKEN_REVOKED");
      const audit = await listAuditEvents(p.db, { orgSlug: "newco", kind: "api_token." });
      expect(audit.map((e) => [e.kind, e.actor])).toEqual([
        ["api_token.created", "web:nina"],
        ["api_token.revoked", "web:nina"],
      ]);
      await loadingAndErrorStates(nina, `${p.base}/orgs/newco/settings/tokens`, "tokens.list", "api tokens");
    } finally {
      await other.close();
    }
  });

  it("a member sees 'Admins only' and the server refuses the console's calls", async () => {
    const other = await TestBrowser.launch();
    try {
      const dev = await other.page();
      await signIn(dev, p.base, "dev", "/orgs/acme/settings/members");
      await dev.getByText("Admins only").waitFor();
      for (const [path, input] of [
        ["members.add", { org: "acme", login: "evil", forgeId: 1, role: "admin" }],
        ["repos.connect", { org: "acme", name: "acme/evil", cloneUrl: "https://example.com/e.git" }],
        ["tokens.create", { org: "acme", name: "evil", role: "admin", expiresInDays: 1 }],
      ] as const) {
        const res = await dev.evaluate(
          async ([path, input]) => {
            const r = await fetch(`/api/trpc/${path}`, {
              method: "POST",
              headers: { "content-type": "application/json" },
              body: JSON.stringify(input),
            });
            return {
              status: r.status,
              code: ((await r.json()) as { error?: { data?: { code?: string } } }).error?.data?.code,
            };
          },
          [path, input] as const,
        );
        expect([path, res]).toEqual([path, { status: 403, code: "FORBIDDEN" }]);
      }
      const evil = await p.db.$queryRaw<{ n: number }[]>`
        SELECT ((SELECT count(*) FROM app_user WHERE login = 'evil') + (SELECT count(*) FROM repo WHERE full_name = 'acme/evil')
          + (SELECT count(*) FROM api_token WHERE name = 'evil'))::int AS n`;
      expect(evil[0]?.n).toBe(0);
    } finally {
      await other.close();
    }
  });
});
