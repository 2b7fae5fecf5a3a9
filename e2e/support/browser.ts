import { mkdtemp, mkdir, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { chromium, type BrowserContext, type Page } from "playwright-core";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
// Tests never rewrite tracked files: screenshots land in the ignored .artifacts/screenshots/, and
// `npm run screenshots` (scripts/refresh-screenshots.ts) copies them over docs/screenshots on purpose.
const SCREENSHOTS = path.join(ROOT, ".artifacts/screenshots");

/**
 * Real Chromium (Debian's /usr/bin/chromium, installed by CI; never a downloaded browser) driven by
 * playwright-core. A fresh user-data-dir per launch, so no state leaks between runs.
 */
export class TestBrowser {
  private context!: BrowserContext;
  private dataDir = "";

  static async launch(opts: { colorScheme?: "light" | "dark" } = {}): Promise<TestBrowser> {
    const b = new TestBrowser();
    b.dataDir = await mkdtemp(path.join(os.tmpdir(), "kiln-chromium-"));
    b.context = await chromium.launchPersistentContext(b.dataDir, {
      executablePath: process.env.KILN_CHROMIUM ?? "/usr/bin/chromium",
      headless: true,
      args: [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--disable-quic",
      ],
      viewport: { width: 1360, height: 900 },
      colorScheme: opts.colorScheme ?? "light",
      timezoneId: "UTC",
      locale: "en-GB",
    });
    b.context.setDefaultTimeout(20_000);
    return b;
  }

  get browserContext(): BrowserContext {
    return this.context;
  }

  async page(): Promise<Page> {
    const page = await this.context.newPage();
    page.on("pageerror", (e) => console.error(`[browser pageerror] ${e.message}`));
    return page;
  }

  async close(): Promise<void> {
    await this.context?.close();
    await rm(this.dataDir, { recursive: true, force: true });
  }
}

/** The development sign-in (KILN_DEV_LOGIN=1): fill the member's login, land where `from` said. */
export async function signIn(page: Page, base: string, login: string, from = "/orgs"): Promise<void> {
  await page.goto(`${base}${from}`);
  await page.waitForURL(/\/sign-in/);
  await page.getByLabel("Member login").fill(login);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.waitForURL((u) => !u.pathname.startsWith("/sign-in"));
}

export async function screenshot(page: Page, name: string): Promise<void> {
  await mkdir(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true });
}

export type { Page };
