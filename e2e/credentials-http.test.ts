import { randomUUID } from "node:crypto";
import {
  addMember,
  createAgentToken,
  createApiToken,
  revokeAgentToken,
  revokeApiToken,
  setPoolPolicy,
} from "@kiln/engine";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signIn, TestBrowser, type Page } from "./support/browser.ts";
import { Platform } from "./support/platform.ts";

// Issue 15, black box against `next start`: expiring and revocable credentials as the API answers
// them, the HTTP hardening (CSP with per-request nonces, nosniff, Referrer-Policy, Origin checks on
// state changes, bounded tRPC bodies), and the tokens page in Debian's Chromium under that CSP.
const p = new Platform({ KILN_DEV_LOGIN: "1", AUTH_SECRET: "e2e-only-session-secret-0123456789abcdef" });
let acme: Awaited<ReturnType<Platform["seedTenant"]>>;
let browser: TestBrowser;

const WORKFLOW = 'version: 1\njobs:\n  - name: a\n    steps: ["true"]\n';

beforeAll(async () => {
  await p.start();
  acme = await p.seedTenant("acme", { ".kiln/workflow.yaml": WORKFLOW }, { member: "dev" });
  await p.seedTenant("globex", { ".kiln/workflow.yaml": WORKFLOW }, { member: "eve" });
  await addMember(p.db, { orgSlug: "acme", login: "ada", role: "admin" });
  browser = await TestBrowser.launch();
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await p.stop();
});

/** A GET of a run that does not exist: any authenticated caller gets 404, the rest say why not. */
const probe = (token: string) => p.api("GET", `/v1/workflow-runs/${randomUUID()}`, token);

function nonceOf(csp: string | null): string {
  const m = csp ? /'nonce-([A-Za-z0-9+/=]+)'/.exec(csp) : null;
  if (!m?.[1]) throw new Error(`no nonce in CSP ${csp}`);
  return m[1];
}

describe("credentials over HTTP", { timeout: 120_000 }, () => {
  it("an expired and a revoked API token answer 401 with named codes", async () => {
    expect((await probe(acme.token)).status).toBe(404);
    const old = await createApiToken(p.db, { orgSlug: "acme", role: "member", name: "old" });
    await p.db.$executeRaw`UPDATE api_token SET expires_at = now() - interval '1 second' WHERE id = ${old.id}::uuid`;
    const expired = await probe(old.token);
    expect([expired.status, expired.json?.error?.code]).toEqual([401, "AUTH.TOKEN_EXPIRED"]);
    const gone = await createApiToken(p.db, { orgSlug: "acme", role: "member", name: "gone" });
    await revokeApiToken(p.db, { orgSlug: "acme", tokenId: gone.id });
    const revoked = await probe(gone.token);
    expect([revoked.status, revoked.json?.error?.code]).toEqual([401, "AUTH.TOKEN_REVOKED"]);
  });

  it("a revoked host credential can neither register a session nor claim with its old one", async () => {
    await setPoolPolicy(p.db, { name: "revoked-pool", minIsolation: "process", development: true, actor: "e2e" });
    const cred = await createAgentToken(p.db, { pool: "revoked-pool" });
    const body = {
      hostname: "h1",
      capacity: 1,
      labels: { os: "linux", arch: "x64", resource_class: "small", isolation: "process" },
    };
    const reg = await p.api("POST", "/v1/agent/sessions", cred.token, body);
    expect(reg.status).toBe(201);
    await revokeAgentToken(p.db, { id: cred.id });
    const again = await p.api("POST", "/v1/agent/sessions", cred.token, body);
    expect([again.status, again.json?.error?.code]).toEqual([401, "AUTH.CREDENTIAL_REVOKED"]);
    const claim = await p.api("POST", "/v1/agent/claims", cred.token, {
      session_id: reg.json.session_id,
      claim_request_id: randomUUID(),
      wait_ms: 0,
    });
    expect([claim.status, claim.json?.error?.code]).toEqual([401, "AUTH.CREDENTIAL_REVOKED"]);
  });
});

describe("HTTP hardening", { timeout: 120_000 }, () => {
  it("/v1 answers carry nosniff, a Referrer-Policy and a CSP that forbids everything and framing", async () => {
    const r = await fetch(`${p.base}/v1/workflow-runs/${randomUUID()}`, {
      headers: { authorization: `Bearer ${acme.token}` },
    });
    expect(r.status).toBe(404);
    expect(r.headers.get("x-content-type-options")).toBe("nosniff");
    expect(r.headers.get("referrer-policy")).toBe("strict-origin-when-cross-origin");
    expect(r.headers.get("content-security-policy")).toContain("default-src 'none'");
    expect(r.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
  });

  it("every dashboard page gets its own nonce, and Next's script tags carry it", async () => {
    const nonces: string[] = [];
    for (let i = 0; i < 2; i++) {
      const r = await fetch(`${p.base}/sign-in`);
      expect(r.status).toBe(200);
      const csp = r.headers.get("content-security-policy");
      expect(csp).toContain("frame-ancestors 'none'");
      expect(csp).toContain("'strict-dynamic'");
      expect(csp).not.toContain("unsafe-eval");
      expect(r.headers.get("x-content-type-options")).toBe("nosniff");
      expect(r.headers.get("referrer-policy")).toBe("strict-origin-when-cross-origin");
      const nonce = nonceOf(csp);
      const html = await r.text();
      const scripts = [...html.matchAll(/<script\b[^>]*>/g)].map((m) => m[0]);
      expect(scripts.length).toBeGreaterThan(0);
      for (const tag of scripts) expect(tag).toContain(`nonce="${nonce}"`);
      nonces.push(nonce);
    }
    expect(nonces[0]).not.toBe(nonces[1]);
  });

  it("a cross-origin or Origin-less state change is refused with 403 REQUEST.CROSS_ORIGIN", async () => {
    const post = (path: string, headers: Record<string, string>) =>
      fetch(`${p.base}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json", ...headers },
        body: JSON.stringify({ org: "acme", tokenId: randomUUID() }),
      });
    for (const headers of [{ origin: "http://evil.example" }, {}] as Record<string, string>[]) {
      for (const path of ["/api/trpc/tokens.revoke", "/api/auth/signout", "/sign-in"]) {
        const r = await post(path, headers);
        expect(r.status, `${path} ${JSON.stringify(headers)}`).toBe(403);
        expect(((await r.json()) as { error: { code: string } }).error.code).toBe("REQUEST.CROSS_ORIGIN");
      }
    }
    // The same request from the site itself reaches tRPC (which then wants a session).
    const own = await post("/api/trpc/tokens.revoke", { origin: p.base });
    expect(own.status).toBe(401);
  });

  it("a tRPC body over 1 MiB is refused with 413 before it is parsed", async () => {
    const big = JSON.stringify({ org: "acme", tokenId: "x".repeat(1024 * 1024 + 10) });
    const r = await fetch(`${p.base}/api/trpc/tokens.revoke`, {
      method: "POST",
      headers: { "content-type": "application/json", origin: p.base },
      body: big,
    });
    expect(r.status).toBe(413);
    expect(((await r.json()) as { error: { code: string } }).error.code).toBe("REQUEST.TOO_LARGE");
  });
});

describe("the tokens page in Chromium, under the CSP", { timeout: 180_000 }, () => {
  async function watchedPage(): Promise<{ page: Page; violations: string[] }> {
    const page = await browser.page();
    const violations: string[] = [];
    page.on("console", (m) => {
      if (/Content Security Policy|Refused to (execute|load|apply|connect|frame)/i.test(m.text()))
        violations.push(m.text());
    });
    // Injected by the browser driver, outside the page's CSP: sees every violation report.
    await page.addInitScript(() => {
      document.addEventListener("securitypolicyviolation", (e) => {
        (window as unknown as { __csp: string[] }).__csp ??= [];
        (window as unknown as { __csp: string[] }).__csp.push(
          `${e.violatedDirective} ${e.blockedURI} at ${e.sourceFile}:${e.lineNumber} ${e.sample}`,
        );
      });
    });
    return { page, violations };
  }
  const reported = (page: Page) => page.evaluate(() => (window as unknown as { __csp?: string[] }).__csp ?? []);

  it("an admin lists the org's tokens and revokes one with the keyboard; the API then refuses it", async () => {
    const { page, violations } = await watchedPage();
    await signIn(page, p.base, "ada", "/orgs/acme");
    // Client-side navigation works (hydrated under the nonce): the header's links route in place.
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Settings" }).click();
    await page.waitForURL((u) => u.pathname === "/orgs/acme/settings");
    await page.getByRole("link", { name: "API tokens" }).click();
    await page.waitForURL((u) => u.pathname === "/orgs/acme/settings/tokens");
    await page.getByRole("heading", { name: "API tokens" }).waitFor();
    expect(await reported(page)).toEqual([]);
    const table = page.getByTestId("api-tokens");
    await table.waitFor();
    const live = await createApiToken(p.db, { orgSlug: "acme", role: "member", name: "ci-bot" });
    await page.reload();
    const row = page.locator(`tr[data-token-id='${live.id}']`);
    await row.waitFor();
    expect(await row.getByTestId("token-state").textContent()).toBe("active");
    // Another org's tokens are not on the page.
    const globexIds = await p.db.$queryRaw<{ id: string }[]>`
      SELECT t.id FROM api_token t JOIN org o ON o.id = t.org_id WHERE o.slug = 'globex'`;
    for (const g of globexIds) expect(await page.locator(`tr[data-token-id='${g.id}']`).count()).toBe(0);

    const revoke = page.getByRole("button", { name: "Revoke ci-bot" });
    await revoke.focus();
    await page.keyboard.press("Enter");
    await page.getByRole("status").filter({ hasText: "Revoked ci-bot" }).waitFor();
    expect(await row.getByTestId("token-state").textContent()).toBe("revoked");
    const after = await probe(live.token);
    expect([after.status, after.json?.error?.code]).toEqual([401, "AUTH.TOKEN_REVOKED"]);

    // Another org's token id through the page's own session: not found, and nothing changes.
    const globexToken = globexIds[0]?.id ?? randomUUID();
    const cross = await page.evaluate(async (tokenId) => {
      const res = await fetch("/api/trpc/tokens.revoke", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ org: "acme", tokenId }),
      });
      return { status: res.status, body: (await res.json()) as { error?: { data?: { domainCode?: string } } } };
    }, globexToken);
    expect(cross.status).toBe(404);
    expect(cross.body.error?.data?.domainCode).toBe("TOKEN.NOT_FOUND");
    const still = await p.db.$queryRaw<{ revoked: boolean }[]>`
      SELECT revoked_at IS NOT NULL AS revoked FROM api_token WHERE id = ${globexToken}::uuid`;
    expect(still[0]?.revoked ?? false).toBe(false);

    // The rest of the dashboard still works under the policy.
    await page.goto(`${p.base}/orgs/acme/runs`);
    await page.getByRole("heading", { name: "Runs" }).waitFor();
    expect(await reported(page)).toEqual([]);
    expect(violations).toEqual([]);
    await page.close();
  });

  it("a member gets a refusal, not the list", async () => {
    await browser.browserContext.clearCookies();
    const { page, violations } = await watchedPage();
    await signIn(page, p.base, "dev", "/orgs/acme/settings/tokens");
    await page.getByRole("heading", { name: "API tokens" }).waitFor();
    await page.getByRole("alert").filter({ hasText: "Admins only" }).waitFor();
    expect(await page.getByTestId("api-tokens").count()).toBe(0);
    expect(await reported(page)).toEqual([]);
    expect(violations).toEqual([]);
    await page.close();
  });
});
