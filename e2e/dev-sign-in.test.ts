import { spawn } from "node:child_process";
import path from "node:path";
import { freePort } from "@kiln/testkit";
import { afterAll, describe, expect, it } from "vitest";
import { Platform } from "./support/platform.ts";

// The password-less development sign-in is an authentication bypass by design, so the production
// web server (`next start`, the real build) refuses to start with it where a real deployment would
// be: under NODE_ENV=production or on a public URL that is not loopback. A local production build
// (npm run up, these suites) runs with NODE_ENV=test and a loopback URL, and keeps it.
const ROOT = path.resolve(import.meta.dirname, "..");
const NEXT_BIN = path.join(ROOT, "node_modules/next/dist/bin/next");
const SECRET = "e2e-only-session-secret-0123456789abcdef";

/**
 * Starts `next start` with exactly `env` (plus PATH/HOME). Resolves with exit null once it served
 * /sign-in (then it is stopped), else with its exit status (-1: still running after the deadline).
 */
async function startWeb(env: Record<string, string>): Promise<{ exit: number | null; output: string }> {
  const port = await freePort();
  const child = spawn(process.execPath, [NEXT_BIN, "start", "-p", String(port), "-H", "127.0.0.1"], {
    cwd: path.join(ROOT, "apps/web"),
    env: {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: process.env.HOME ?? "/tmp",
      NEXT_TELEMETRY_DISABLED: "1",
      DATABASE_URL: "postgresql://unused@127.0.0.1:9/unused",
      AUTH_SECRET: SECRET,
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout.on("data", (b: Buffer) => (output += b.toString()));
  child.stderr.on("data", (b: Buffer) => (output += b.toString()));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  // Next starts listening before it registers instrumentation; a request makes sure it got that far.
  const deadline = Date.now() + 60_000;
  let served = false;
  while (Date.now() < deadline && child.exitCode === null) {
    const ok = await fetch(`http://127.0.0.1:${port}/sign-in`).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ok) {
      served = true;
      break;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  if (served) {
    child.kill("SIGTERM");
    await exited;
    return { exit: null, output };
  }
  const exit = await Promise.race([exited, new Promise<number | null>((r) => setTimeout(() => r(-1), 10_000))]);
  if (child.exitCode === null) child.kill("SIGKILL");
  return { exit, output };
}

describe("development sign-in guard (real next start)", { timeout: 120_000 }, () => {
  it("refuses to start under NODE_ENV=production, naming the setting", async () => {
    const r = await startWeb({ KILN_DEV_LOGIN: "1", NODE_ENV: "production", AUTH_URL: "http://127.0.0.1:3000" });
    // It exits (status 1) rather than serving anything.
    expect(r.exit, r.output).toBe(1);
    expect(r.output).toContain("KILN_DEV_LOGIN=1");
    expect(r.output).toContain("NODE_ENV=production");
  });

  it("refuses to start when the public URL is not loopback, naming the setting", async () => {
    const r = await startWeb({ KILN_DEV_LOGIN: "1", NODE_ENV: "test", KILN_PUBLIC_URL: "https://ci.example.com" });
    expect(r.exit, r.output).toBe(1);
    expect(r.output).toContain("KILN_PUBLIC_URL=https://ci.example.com is not a loopback address");
  });

  it("a production server without the development sign-in starts under NODE_ENV=production", async () => {
    const r = await startWeb({ NODE_ENV: "production", KILN_PUBLIC_URL: "https://ci.example.com" });
    expect(r, r.output).toMatchObject({ exit: null });
  });

  const p = new Platform({ KILN_DEV_LOGIN: "1", AUTH_SECRET: SECRET });
  afterAll(() => p.stop());
  it("a local production build on loopback keeps it and says so on the sign-in page", async () => {
    await p.start();
    const page = await fetch(`${p.base}/sign-in`).then((r) => r.text());
    expect(page).toContain("Development sign-in");
    expect(page).toContain("Member login");
  });
});
