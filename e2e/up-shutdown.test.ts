// `npm run up` stopped by a terminal's Ctrl-C (issue 33): the terminal signals the whole foreground
// process group, so this test starts `up` as the leader of a group of its own and sends SIGINT to
// that group, as a terminal does. Before the fix, PostgreSQL got the signal with everything else and
// shut down under the still-connected web server and workers, which logged 57P01.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { freePort, REPO_ROOT } from "@kiln/testkit";
import { afterAll, describe, expect, it } from "vitest";

let child: ChildProcess | null = null;
let dataDir = "";

afterAll(async () => {
  if (child?.pid && child.exitCode === null) process.kill(-child.pid, "SIGKILL");
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

function exited(p: ChildProcess, ms: number): Promise<number | null> {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`up did not stop within ${ms} ms`)), ms);
    p.once("exit", (code) => {
      clearTimeout(t);
      resolve(code);
    });
  });
}

describe("npm run up and Ctrl-C", () => {
  it("stops the apps before PostgreSQL: no connection is cut from under them", async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), "kiln-up-"));
    const port = await freePort();
    // Only what a developer's shell would pass: no DATABASE_URL etc. from the test run, so `up`
    // starts its own embedded PostgreSQL, Redis and S3 server as it does on a fresh machine.
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      PORT: String(port),
      KILN_DATA_DIR: dataDir,
      KILN_AGENTS: "1",
      KILN_SANDBOX_DRIVER: "process",
      // The toolchain images (docs/adr/0040) are not what this test is about: minutes on a cold cache.
      KILN_TOOLCHAIN_IMAGES: "none",
      NEXT_TELEMETRY_DISABLED: "1",
    };
    let out = "";
    // As `npm run up` starts it (package.json): one node process with tsx's loader, no tsx wrapper.
    child = spawn(process.execPath, ["--import", "tsx", "scripts/up.ts"], {
      cwd: REPO_ROOT,
      env,
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
    });
    child.stdout?.on("data", (b: Buffer) => {
      out += b.toString("utf8");
    });
    child.stderr?.on("data", (b: Buffer) => {
      out += b.toString("utf8");
    });
    const up = child;
    await new Promise<void>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`up was not ready in time:\n${out.slice(-4000)}`)), 240_000);
      const poll = setInterval(() => {
        if (out.includes("Kiln is up.")) {
          clearInterval(poll);
          clearTimeout(t);
          resolve();
        }
      }, 200);
      up.once("exit", (code) => {
        clearInterval(poll);
        clearTimeout(t);
        reject(new Error(`up exited ${code} before it was ready:\n${out.slice(-4000)}`));
      });
    });
    // Let the workers and the agent settle into their polling loops: that is when a cut hurts.
    await new Promise((r) => setTimeout(r, 3000));
    const readyAt = out.length;
    process.kill(-(up.pid as number), "SIGINT");
    const code = await exited(up, 120_000);
    const shutdownLog = out.slice(readyAt);
    expect(shutdownLog).toContain("[up] stopping");
    expect(shutdownLog).not.toMatch(/57P01|terminating connection due to administrator command/);
    expect(code).toBe(0);
  }, 400_000);
});
