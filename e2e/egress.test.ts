import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { promisify } from "node:util";
import { sign } from "@octokit/webhooks-methods";
import { platformKey, signJobToken } from "@kiln/engine";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Platform } from "./support/platform.ts";

// Issue 3, mediated egress, end to end: real web server, workers and host agent (process driver,
// steps in their own network namespace), real curl inside the step. The step's only way out is the
// host proxy: a trusted run reaches the allow-listed local server and is denied the other one, a
// fork PR run (untrusted) is denied even the allow-listed one, and neither can reach a host
// loopback service directly. Denials show in the job log and in GET /v1/workflow-runs/:id/egress.
const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, "..");
// Fork PRs here run on the development pool's process agents: this suite is about the proxy's policy.
const p = new Platform({ KILN_LEASE_TTL_MS: "15000", KILN_HEARTBEAT_MS: "1000" }, { untrustedOnProcess: true });
let tenant: Awaited<ReturnType<Platform["seedTenant"]>>;
const servers: http.Server[] = [];
let allowedPort = 0;
let otherPort = 0;

function serve(body: string): Promise<number> {
  const s = http.createServer((_req, res) => res.end(body));
  servers.push(s);
  return new Promise((resolve) => s.listen(0, "127.0.0.1", () => resolve((s.address() as AddressInfo).port)));
}

// Each probe prints one verdict line; the test reads them back from the job log.
const workflow = () => `version: 1
jobs:
  - name: fetch
    steps:
      - |
        # The test servers are "localhost" on the host; the sandbox's NO_PROXY keeps its own
        # localhost direct, so this job sends everything through the proxy.
        unset NO_PROXY no_proxy
        probe() { name=$1; shift; if out=$(curl -sS -f --max-time 20 "$@" 2>/dev/null); then echo "$name reached: $out"; else echo "$name blocked"; fi; }
        probe allowed-http http://localhost:${allowedPort}/
        probe allowed-connect -p http://localhost:${allowedPort}/
        probe other http://localhost:${otherPort}/
        probe ip-literal http://127.0.0.1:${allowedPort}/
        probe direct --noproxy '*' --max-time 5 http://127.0.0.1:${allowedPort}/
`;

beforeAll(async () => {
  for (const tool of ["/usr/bin/curl", "/usr/bin/perl"]) {
    if (!existsSync(tool))
      throw new Error(`${tool} is missing: the egress e2e needs Debian's curl and perl (.ci/run installs curl)`);
  }
  allowedPort = await serve("hello from the allowed server");
  otherPort = await serve("hello from the other server");
  await p.start();
  tenant = await p.seedTenant("egress", { ".kiln/workflow.yaml": workflow() }, { member: "dev" });
  // Both test servers live on this host's loopback, which egress refuses by default (DNS must not
  // turn an allowed name into the host's own services); this agent is told to allow it.
  await p.startAgent("agent-1", tenant.agentToken, { KILN_EGRESS_ALLOW_INTERNAL: "true" });
}, 180_000);
afterAll(async () => {
  await p.stop();
  for (const s of servers) s.close();
});

async function finished(runId: string): Promise<any> {
  return p.waitForRun(runId, tenant.token, (x) => x.status === "completed", 90_000);
}

async function jobLog(jobId: string, stream: "stdout" | "stderr"): Promise<string> {
  const r = await fetch(`${p.base}/v1/jobs/${jobId}/logs/raw?stream=${stream}`, {
    headers: { authorization: `Bearer ${tenant.token}` },
  });
  expect(r.status).toBe(200);
  return r.text();
}

async function egressOf(runId: string): Promise<any[]> {
  const r = await p.api("GET", `/v1/workflow-runs/${runId}/egress`, tenant.token);
  expect(r.status).toBe(200);
  return r.json.events;
}

describe("mediated egress", () => {
  let trustedRun = "";
  let trustedJob = "";

  it("the CLI puts a host on the org's allow-list (audited)", async () => {
    const { stdout } = await run(
      process.execPath,
      ["--import", "tsx", "scripts/kiln.ts", "egress", "allow", "egress", `LOCALHOST:${allowedPort}`, "--json"],
      {
        cwd: ROOT,
        env: { ...process.env, DATABASE_URL: p.dbUrl },
      },
    );
    expect(JSON.parse(stdout)).toMatchObject({
      created: true,
      rule: { org: "egress", pattern: `localhost:${allowedPort}` },
    });
    const audit = await p.db.$queryRaw<
      { action: string; pattern: string }[]
    >`SELECT action, pattern FROM egress_rule_change`;
    expect(audit).toEqual([{ action: "allow", pattern: `localhost:${allowedPort}` }]);
  }, 60_000);

  it("a trusted run reaches the allowed server only; the denial is in its log and its egress record", async () => {
    const r = await p.api(
      "POST",
      `/v1/repos/${tenant.repoId}/workflow-runs`,
      tenant.token,
      { workflow_path: ".kiln/workflow.yaml", commit_sha: tenant.git.headSha },
      { "idempotency-key": "egress-trusted" },
    );
    expect(r.status).toBe(202);
    const done = await finished(r.json.run_id);
    expect(done).toMatchObject({ outcome: "success", trust_class: "trusted" });
    trustedRun = done.id;
    trustedJob = done.jobs[0].id;
    const stdout = await jobLog(trustedJob, "stdout");
    expect(stdout).toContain("allowed-http reached: hello from the allowed server");
    expect(stdout).toContain("allowed-connect reached: hello from the allowed server");
    expect(stdout).toContain("other blocked");
    // An address never satisfies a name rule, and nothing but the proxy leads out of the sandbox.
    expect(stdout).toContain("ip-literal blocked");
    expect(stdout).toContain("direct blocked");
    const stderr = await jobLog(trustedJob, "stderr");
    expect(stderr).toContain(`kiln egress denied: localhost:${otherPort} is not allowed for trusted runs`);
    expect(stderr).toContain(`kiln egress denied: 127.0.0.1:${allowedPort} is not allowed for trusted runs`);
    const events = await egressOf(trustedRun);
    const seen = events.map((e) => [e.host, e.port, e.decision, e.reason]);
    expect(seen).toContainEqual(["localhost", allowedPort, "allowed", "allow_list"]);
    expect(seen).toContainEqual(["localhost", otherPort, "denied", "not_on_allow_list"]);
    expect(seen).toContainEqual(["127.0.0.1", allowedPort, "denied", "not_on_allow_list"]);
    // Two requests to the allowed server (plain and CONNECT) folded into one or two rows, counted.
    const allowedCount = events
      .filter((e) => e.decision === "allowed" && e.port === allowedPort)
      .reduce((n, e) => n + e.count, 0);
    expect(allowedCount).toBe(2);
    expect(events.every((e) => e.job_id === trustedJob && e.attempt === 1)).toBe(true);
  }, 120_000);

  it("a fork pull request (untrusted) is denied even the allow-listed host", async () => {
    const body = JSON.stringify({
      action: "opened",
      // A pull_request delivery names its number; the run's ref is refs/pull/<n>/head (issue 28).
      number: 7,
      pull_request: {
        head: { sha: tenant.git.headSha, ref: "feature", repo: { full_name: "outsider/app" } },
        base: { repo: { full_name: tenant.repoName } },
        user: { login: "outsider" },
      },
      repository: { full_name: tenant.repoName },
      sender: { login: "outsider" },
    });
    const hook = await fetch(`${p.base}/v1/webhooks/github`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-github-event": "pull_request",
        "x-github-delivery": "egress-fork-1",
        "x-hub-signature-256": await sign(tenant.secret, body),
      },
      body,
    });
    expect(hook.status).toBe(202);
    const { run_id: runId } = (await hook.json()) as { run_id: string };
    const done = await finished(runId);
    expect(done).toMatchObject({ outcome: "success", trust_class: "untrusted" });
    const stdout = await jobLog(done.jobs[0].id, "stdout");
    expect(stdout).toContain("allowed-http blocked");
    expect(stdout).toContain("allowed-connect blocked");
    expect(stdout).toContain("direct blocked");
    expect(await jobLog(done.jobs[0].id, "stderr")).toContain(
      `kiln egress denied: localhost:${allowedPort} is not allowed for untrusted runs`,
    );
    const seen = (await egressOf(runId)).map((e) => [e.host, e.port, e.decision, e.reason]);
    expect(seen).toContainEqual(["localhost", allowedPort, "denied", "untrusted_run"]);
    expect(seen.filter((e) => e[2] === "allowed")).toEqual([]);
  }, 120_000);

  it("a stale epoch's egress report is refused with 409 and records nothing", async () => {
    const attempts = await p.db.$queryRaw<{ id: string }[]>`SELECT id FROM attempt WHERE job_id = ${trustedJob}::uuid`;
    const attemptId = attempts[0]?.id ?? "";
    const before = await p.db.$queryRaw<{ n: bigint }[]>`SELECT count(*) AS n FROM egress_event`;
    const key = await platformKey(p.db);
    const report = (epoch: number) => ({
      epoch,
      batch_seq: 99,
      events: [
        {
          host: "late.example.com",
          port: 443,
          decision: "denied",
          reason: "not_on_allow_list",
          count: 1,
          at: new Date().toISOString(),
        },
      ],
    });
    // The finished attempt's own token (its sandbox is gone; the job has no running epoch).
    const finishedToken = signJobToken(key, { jobId: trustedJob, attemptId, epoch: 1 });
    const late = await p.api("POST", `/v1/agent/jobs/${trustedJob}/egress-events`, finishedToken, report(1));
    expect(late.status).toBe(409);
    expect(late.json.error.code).toBe("ATTEMPT.STALE_EPOCH");
    // A body naming another epoch than the token's.
    const mismatched = await p.api("POST", `/v1/agent/jobs/${trustedJob}/egress-events`, finishedToken, report(2));
    expect(mismatched.status).toBe(409);
    const after = await p.db.$queryRaw<{ n: bigint }[]>`SELECT count(*) AS n FROM egress_event`;
    expect(after[0]?.n).toBe(before[0]?.n);
    // Another org's token sees no such run.
    const other = await p.seedTenant("egress-other", { ".kiln/workflow.yaml": workflow() });
    expect((await p.api("GET", `/v1/workflow-runs/${trustedRun}/egress`, other.token)).status).toBe(404);
  }, 60_000);
});
