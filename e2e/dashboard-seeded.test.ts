import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { screenshot, signIn, TestBrowser, type Page } from "./support/browser.ts";
import { Platform } from "./support/platform.ts";

// Dashboard behaviour that needs data the engine would take minutes to produce (a run that used up
// its platform-retry budget, a 50-job run, a 50 MiB log), written to the database or served
// synthetically, and shown by the production server in real Chromium. No host agent runs here.
const p = new Platform({ KILN_DEV_LOGIN: "1", AUTH_SECRET: "e2e-only-session-secret-0123456789abcdef" });
let acme: Awaited<ReturnType<Platform["seedTenant"]>>;
let browser: TestBrowser;
let dev: Page;
let wideRunId = "";

beforeAll(async () => {
  await p.start();
  acme = await p.seedTenant(
    "acme",
    { ".kiln/workflow.yaml": 'version: 1\njobs:\n  - name: a\n    steps: ["true"]\n' },
    { member: "dev" },
  );
  wideRunId = await seedWideRun();
  browser = await TestBrowser.launch();
  dev = await browser.page();
  await signIn(dev, p.base, "dev", "/orgs/acme");
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await p.stop();
});

describe("dashboard with seeded data", { timeout: 240_000 }, () => {
  it("tells a platform failure apart from the user's, with every epoch and why it ended", async () => {
    // Written to the database: exhausting the retry budget for real takes three killed agents.
    const runId = await seedPlatformFailure();
    await dev.goto(`${p.base}/orgs/acme/runs/${runId}`);
    const failure = dev.getByTestId("first-failure");
    await failure.waitFor();
    const text = (await failure.textContent()) ?? "";
    expect(text).toContain("platform");
    expect(text).toContain("The platform's");
    const attempts = await dev.locator("[data-job='integration'] [data-epoch]").allTextContents();
    expect(attempts.map((a) => /Epoch (\d)/.exec(a)?.[1])).toEqual(["1", "2", "3"]);
    expect(attempts[0]).toContain("lease.lost");
    expect(attempts[1]).toContain("agent.shutdown");
    await screenshot(dev, "run-platform-failure");
    // The org home counts it: one platform failure among the jobs that finished in the last hour.
    await dev.goto(`${p.base}/orgs/acme`);
    await dev.getByText("1 of 52 finished jobs").waitFor();
    await screenshot(dev, "org-home");
  });

  it("stays smooth on a 50 MB log (windowed rendering)", async () => {
    const [job] = await p.db.$queryRaw<
      { id: string }[]
    >`SELECT id FROM job_run WHERE run_id = ${wideRunId}::uuid AND name = 'job-0'`;
    // Served by a local HTTP server the browser's request is redirected to, so the body streams
    // over a socket like the real API's (a Playwright-fulfilled body would be copied through CDP).
    const body = syntheticLog(50 * 1024 * 1024);
    const server = http.createServer((_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      let at = 0;
      const pump = () => {
        while (at < body.length) {
          const ok = res.write(body.subarray(at, at + 256 * 1024));
          at += 256 * 1024;
          if (!ok) return void res.once("drain", pump);
        }
        res.end();
      };
      pump();
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const synthetic = `http://127.0.0.1:${(server.address() as AddressInfo).port}/events`;
    let served = 0;
    await dev.route(`**/v1/jobs/${job!.id}/logs/events`, (route) =>
      served++ === 0 ? route.continue({ url: synthetic }) : route.fulfill({ status: 204 }),
    );
    try {
      const t0 = Date.now();
      await dev.goto(`${p.base}/orgs/acme/runs/${wideRunId}/jobs/${job!.id}`);
      await dev.locator("[data-log-state='ended']").waitFor({ timeout: 120_000 });
      const loadMs = Date.now() - t0;
      const net = await dev.evaluate(() => {
        const e = performance.getEntriesByType("resource").find((x) => x.name.includes("/logs/events")) as
          | PerformanceResourceTiming
          | undefined;
        return e
          ? { start: e.startTime, responseStart: e.responseStart, responseEnd: e.responseEnd, now: performance.now() }
          : null;
      });
      console.log(`[dashboard e2e] 50 MiB log network: ${JSON.stringify(net)}`);
      const stats = await dev.evaluate(async () => {
        const el = document.querySelector<HTMLElement>("[role='region'][aria-label^='Log output']")!;
        const long: number[] = [];
        new PerformanceObserver((l) => l.getEntries().forEach((e) => long.push(e.duration))).observe({
          type: "longtask",
        });
        const frames: number[] = [];
        let last = performance.now();
        for (let i = 0; i < 120; i++) {
          el.scrollTop = Math.random() * (el.scrollHeight - el.clientHeight);
          await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
          const now = performance.now();
          frames.push((now - last) / 2);
          last = now;
        }
        el.scrollTop = el.scrollHeight;
        await new Promise((r) => setTimeout(r, 200));
        frames.sort((a, b) => a - b);
        const rows = el.querySelectorAll("[data-line]");
        return {
          p50: frames[60]!,
          p95: frames[114]!,
          longTasks: long.length,
          domRows: rows.length,
          lastLine: Number(rows[rows.length - 1]?.getAttribute("data-line")),
        };
      });
      console.log(
        `[dashboard e2e] 50 MiB log: loaded and decoded in ${loadMs} ms; random scrolling frame p50 ${stats.p50.toFixed(1)} ms, p95 ${stats.p95.toFixed(1)} ms; ${stats.longTasks} long tasks; ${stats.domRows} rows in the DOM`,
      );
      expect(stats.domRows).toBeLessThan(200);
      expect(stats.lastLine).toBe(LINES_IN_50MIB);
      const k = loadScale("50 MiB log frame times");
      expect(stats.p50).toBeLessThan(50 * k);
      expect(stats.p95).toBeLessThan(150 * k);
      await screenshot(dev, "job-log-50mb");
    } finally {
      await dev.unroute(`**/v1/jobs/${job!.id}/logs/events`);
      server.close();
    }
  }, 240_000);

  it("serves the run page for a 50-job run in under 200 ms", async () => {
    const page = await timed(() => dev.request.get(`${p.base}/orgs/acme/runs/${wideRunId}`));
    const api = await timed(() =>
      dev.request.get(
        `${p.base}/api/trpc/runs.get?input=${encodeURIComponent(JSON.stringify({ org: "acme", runId: wideRunId }))}`,
      ),
    );
    console.log(
      `[dashboard e2e] 50-job run page: HTML (server-rendered with data) median ${page.toFixed(0)} ms; tRPC runs.get median ${api.toFixed(0)} ms`,
    );
    expect(page).toBeLessThan(200 * loadScale("the 200 ms run-page budget"));
  });
});

/**
 * Timing budgets are always asserted, scaled by how oversubscribed the machine is when other suites
 * run beside this one (1-minute load average per core, at least 1): a test that silently stopped
 * asserting under load would be a check that cannot fail. The unscaled targets are measured on a
 * quiet machine (docs/adr/0010; docs/benchmarks.md), and the figures are logged either way.
 */
function loadScale(what: string): number {
  const k = Math.max(1, (os.loadavg()[0] ?? 0) / os.cpus().length);
  if (k > 1)
    console.warn(
      `[dashboard e2e] load average ${(os.loadavg()[0] ?? 0).toFixed(1)} on ${os.cpus().length} cores: ${what} asserted at ${k.toFixed(1)}x`,
    );
  return k;
}

/** Median wall time of 7 calls after one warm-up; each must answer 200. */
async function timed(call: () => Promise<{ status(): number }>): Promise<number> {
  expect((await call()).status()).toBe(200);
  const samples: number[] = [];
  for (let i = 0; i < 7; i++) {
    const t = performance.now();
    const r = await call();
    samples.push(performance.now() - t);
    expect(r.status()).toBe(200);
  }
  return samples.sort((a, b) => a - b)[3]!;
}

const LOG_LINE = "2026-11-29T12:00:00.000Z \u001b[32mINFO\u001b[0m compiling module 0123456789 of 9999999999 ... ok\n";
const CHUNK_LINES = 800;
let LINES_IN_50MIB = 0;

/** An SSE body in the log API's format: `bytes` of ANSI-coloured output in 800-line events, sealed. */
function syntheticLog(bytes: number): Buffer {
  const chunk = Buffer.from(LOG_LINE.repeat(CHUNK_LINES), "utf8");
  const data = chunk.toString("base64");
  const frames: string[] = ["retry: 1000\n\n", `event: log.attempt\ndata: {"epoch":1}\n\n`];
  let offset = 0;
  let seq = 0;
  for (; offset < bytes; seq++, offset += chunk.length) {
    frames.push(`id: 1:${seq}\ndata: {"stream":"stdout","offset":${offset},"data":"${data}"}\n\n`);
  }
  LINES_IN_50MIB = seq * CHUNK_LINES;
  frames.push(`id: 1:end\nevent: log.sealed\ndata: {"epoch":1,"state":"sealed"}\n\n`);
  return Buffer.from(frames.join(""), "utf8");
}

/** A run whose second job lost three attempts to the platform (lease lost, agent shutdown, lease lost). */
async function seedPlatformFailure(): Promise<string> {
  const [org] = await p.db.$queryRaw<{ id: string }[]>`SELECT id FROM org WHERE slug = 'acme'`;
  const job = (index: number, name: string, needs: number[]) => ({
    index,
    name,
    needs,
    image: null,
    env: {},
    steps: [name === "integration" ? "make integration" : "make"],
    stepNames: [null],
    timeoutMinutes: 30,
    tier: null,
    cache: null,
    artifacts: { publish: [], restore: [] },
  });
  const definition = {
    version: 1,
    env: {},
    jobs: [job(0, "compile", []), job(1, "integration", [0]), job(2, "publish", [1])],
  };
  const [run] = await p.db.$queryRaw<{ id: string }[]>`
    INSERT INTO workflow_run (org_id, repo_id, status, outcome, cause, cause_message, trust_class, trigger, actor, ref, commit_sha, workflow_path, workflow_hash, definition, inputs, created_at, finished_at)
    VALUES (${org!.id}::uuid, ${acme.repoId}::uuid, 'completed', 'platform_failure', 'retry.budget_exhausted', 'the platform failed 3 attempts', 'trusted', 'push', 'dev',
            'refs/heads/main', ${"d".repeat(40)}, '.kiln/workflow.yaml', ${"e".repeat(64)}, ${JSON.stringify(definition)}::jsonb, '{}'::jsonb, now() - interval '3 minutes', now())
    RETURNING id`;
  await p.db.$executeRaw`
    INSERT INTO job_run (run_id, org_id, job_index, name, needs, pool, status, outcome, cause, cause_message, current_epoch, platform_retries, finished_at)
    VALUES (${run!.id}::uuid, ${org!.id}::uuid, 0, 'compile', '{}', 'default', 'completed', 'success', NULL, NULL, 1, 0, now() - interval '150 seconds'),
           (${run!.id}::uuid, ${org!.id}::uuid, 1, 'integration', '{0}', 'default', 'completed', 'platform_failure', 'lease.lost',
            'no heartbeat succeeded within the lease TTL; the agent destroyed the sandbox (retry budget of 2 used up)', 3, 2, now()),
           (${run!.id}::uuid, ${org!.id}::uuid, 2, 'publish', '{1}', 'default', 'completed', 'cancelled', 'needs.not_satisfied', 'not run: a job it needs did not succeed', 0, 0, now())`;
  await p.db.$executeRaw`
    INSERT INTO attempt (job_id, run_id, org_id, epoch, session_id, claim_request_id, host, status, outcome, cause, cause_message, lease_expires_at,
                         queued_ms, image_ms, dispatch_ms, execution_ms, finalize_ms, claimed_at, started_at, finished_at)
    SELECT j.id, j.run_id, j.org_id, a.epoch, gen_random_uuid(), gen_random_uuid()::text, a.host, 'completed', a.outcome, a.cause, a.msg, now(),
           a.queued, 900, 60, a.exec, a.fin, now() - a.started, now() - a.started, now() - a.started + make_interval(secs => a.secs)
    FROM job_run j
    JOIN (VALUES
      (0, 1, 'host-a', 'success', NULL, NULL, 180, 28000, 400, interval '180 seconds', 30),
      (1, 1, 'host-a', 'platform_failure', 'lease.lost', 'no heartbeat succeeded within the lease TTL; the agent destroyed the sandbox', 150, 41000, NULL, interval '148 seconds', 43),
      (1, 2, 'host-b', 'platform_failure', 'agent.shutdown', 'the host agent shut down while the job was running', 2300, 22000, NULL, interval '100 seconds', 25),
      (1, 3, 'host-c', 'platform_failure', 'lease.lost', 'no heartbeat succeeded within the lease TTL; the agent destroyed the sandbox', 700, 35000, NULL, interval '70 seconds', 37)
    ) AS a(job_index, epoch, host, outcome, cause, msg, queued, exec, fin, started, secs) ON a.job_index = j.job_index
    WHERE j.run_id = ${run!.id}::uuid`;
  return run!.id;
}

/** A finished 50-job run written straight to the database (the engine would take minutes to run it). */
async function seedWideRun(): Promise<string> {
  const [org] = await p.db.$queryRaw<{ id: string }[]>`SELECT id FROM org WHERE slug = 'acme'`;
  const definition = {
    version: 1,
    env: {},
    jobs: Array.from({ length: 50 }, (_, i) => ({
      index: i,
      name: `job-${i}`,
      needs: i === 0 ? [] : [Math.floor((i - 1) / 3)],
      image: null,
      env: {},
      steps: ["make"],
      stepNames: [null],
      timeoutMinutes: 30,
      tier: null,
      cache: null,
      artifacts: { publish: [], restore: [] },
    })),
  };
  const [run] = await p.db.$queryRaw<{ id: string }[]>`
    INSERT INTO workflow_run (org_id, repo_id, status, outcome, trust_class, trigger, ref, commit_sha, workflow_path, workflow_hash, definition, inputs, finished_at)
    VALUES (${org!.id}::uuid, ${acme.repoId}::uuid, 'completed', 'success', 'trusted', 'push', 'refs/heads/main', ${"c".repeat(40)}, '.kiln/workflow.yaml',
            ${"f".repeat(64)}, ${JSON.stringify(definition)}::jsonb, '{}'::jsonb, now())
    RETURNING id`;
  await p.db.$executeRaw`
    INSERT INTO job_run (run_id, org_id, job_index, name, needs, pool, status, outcome, current_epoch, finished_at)
    SELECT ${run!.id}::uuid, ${org!.id}::uuid, i, 'job-' || i, CASE WHEN i = 0 THEN '{}'::int[] ELSE ARRAY[(i - 1) / 3] END, 'default', 'completed', 'success', 1, now()
    FROM generate_series(0, 49) i`;
  await p.db.$executeRaw`
    INSERT INTO attempt (job_id, run_id, org_id, epoch, session_id, claim_request_id, host, status, outcome, lease_expires_at,
                         queued_ms, image_ms, dispatch_ms, execution_ms, finalize_ms, claimed_at, started_at, finished_at)
    SELECT j.id, j.run_id, j.org_id, 1, gen_random_uuid(), gen_random_uuid()::text, 'host-1', 'completed', 'success', now(),
           100, 200, 50, 20000, 300, now() - interval '1 minute', now() - interval '1 minute', now()
    FROM job_run j WHERE j.run_id = ${run!.id}::uuid`;
  return run!.id;
}
