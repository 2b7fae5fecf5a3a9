import { createHash } from "node:crypto";
import { existsSync, readdirSync } from "node:fs";
import { readdir, readFile, writeFile } from "node:fs/promises";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { sign } from "@octokit/webhooks-methods";
import { allowEgressHost } from "@kiln/engine";
import { type Platform, startPlatform } from "@kiln/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { seedTenant, type SeededTenant } from "./support/seed-tenant.ts";

// Issue 15, "a hostile tenant reaches nothing", end to end on the process driver, and on the microvm
// driver where QEMU and a guest kernel are installed (the platform as
// `npm run up` starts it: embedded PostgreSQL, Redis and S3 in one data directory, web, workers and
// two root host agents). An untrusted run (a fork pull request) of one org and a trusted run of a
// second org each run the same probe script while a third job (the second org's) holds its sandbox
// open with a canary file in it. Every probe is one attack that must fail: reading the instance's
// data directory, /etc/shadow, the platform checkout, the agents' work directories and the other
// sandbox; block devices; capabilities; other processes' environments; every platform port, directly
// and through the egress proxy. Controls that must succeed (the step's own workspace, the sandbox's
// own loopback forwarder, the trusted org's allow-listed server) prove the probes can tell. Probes
// of the step's own kernel (uid, capabilities, devices) are asserted where the step shares the
// host's kernel (process); in a microVM they describe the guest's kernel and are recorded only.
// The probe script uses busybox for the network (the guest image has nothing else).
const ROOT = path.resolve(import.meta.dirname, "..");
const ASSETS_DIR = path.join(os.tmpdir(), "kiln-microvm-assets");
type Driver = "process" | "microvm";
const DRIVERS: Driver[] = [
  "process",
  ...(existsSync("/usr/bin/qemu-system-x86_64") && readdirSync("/boot").some((f) => f.startsWith("vmlinuz-"))
    ? (["microvm"] as const)
    : []),
];

interface Probe {
  name: string;
  /** Shell that exits 0 exactly when the attack worked (or, for a control, when the control works). */
  attack: string;
  control?: "both" | "trusted";
  /** A fact about the step's own kernel: asserted only where that kernel is the host's. */
  hostKernel?: true;
}

interface Ctx {
  dataDir: string;
  ports: Record<"web" | "postgres" | "redis" | "s3", number>;
  addresses: string[];
  rootDevice: string | null;
  controlPort: number;
  /** sha256 of the host's /etc/shadow (a guest image has its own). */
  shadowSha: string;
}

// Not denied = open: a timeout or a tunnel that opened counts against the sandbox. `req` (in the
// script) sends one request to the proxy named by $HTTP_PROXY and prints the answer.
const viaProxy = (host: string, port: number, connect: boolean) =>
  `! req '${connect ? `CONNECT ${host}:${port} HTTP/1.1\\r\\nHost: ${host}:${port}\\r\\n\\r\\n` : `GET http://${host}:${port}/ HTTP/1.1\\r\\nHost: ${host}:${port}\\r\\nConnection: close\\r\\n\\r\\n`}' | grep -qi 'x-kiln-egress: kiln egress denied'`;

function probes(c: Ctx): Probe[] {
  const list: Probe[] = [
    {
      name: "control: the step writes its own workspace",
      attack: "echo mine > own.txt && cat own.txt",
      control: "both",
    },
    {
      name: "control: the client reaches the sandbox's own proxy forwarder",
      attack: 'busybox nc -w 3 "$PH" "$PP" </dev/null',
      control: "both",
    },
    {
      name: "control: the proxy leads to the trusted org's allow-listed server",
      attack: `req 'GET http://localhost:${c.controlPort}/ HTTP/1.1\\r\\nHost: localhost\\r\\nConnection: close\\r\\n\\r\\n' | grep -q 'control server'`,
      control: "trusted",
    },
    // The directories on the way to the step's own sandbox exist in its view (its paths are the
    // host's), empty but for that one step: anything else listed there is a leak.
    {
      name: "the instance data dir lists anything but the way to the step's own sandbox",
      attack: `ls -A '${c.dataDir}' | grep -vx "$(echo "$KILN_WORKSPACE" | sed 's|^${c.dataDir}/||; s|/.*||')"`,
    },
    { name: "PostgreSQL data files are readable", attack: `cat '${c.dataDir}/postgres/PG_VERSION'` },
    { name: "instance canary (instance.json) is readable", attack: `cat '${c.dataDir}/instance.json'` },
    { name: "the host's /etc/shadow is readable", attack: `sha256sum /etc/shadow | grep -q '^${c.shadowSha}'` },
    { name: "/etc/shadow is visible", attack: "ls -d /etc/shadow", hostKernel: true },
    { name: "/etc/gshadow is visible", attack: "ls -d /etc/gshadow", hostKernel: true },
    { name: "the platform checkout is visible", attack: `ls -d '${ROOT}' '${ROOT}/package.json'` },
    { name: "/root is visible", attack: "ls -d /root", hostKernel: true },
    {
      name: "agent-a's work dir lists anything but the step's own sandbox",
      attack: `ls -A '${c.dataDir}/agent-a' | grep -vx "$(basename "$(dirname "$KILN_WORKSPACE")")"`,
    },
    {
      name: "agent-b's work dir lists anything but the step's own sandbox",
      attack: `ls -A '${c.dataDir}/agent-b' | grep -vx "$(basename "$(dirname "$KILN_WORKSPACE")")"`,
    },
    {
      name: "the held sandbox's canary is anywhere to be found",
      attack: "timeout 60 find / -path /proc -prune -o -name 'kiln-hold-canary*' -print 2>/dev/null | grep -q .",
    },
    { name: "a block device is visible in /dev", attack: "ls -l /dev | grep -q '^b'", hostKernel: true },
    { name: "/dev/mem is visible", attack: "ls -d /dev/mem", hostKernel: true },
    { name: "/dev/kmsg is visible", attack: "ls -d /dev/kmsg", hostKernel: true },
    { name: "a block device node can be made", attack: 'mknod "$TMPDIR/blk" b 8 0', hostKernel: true },
    {
      name: "the step holds a capability",
      attack: "grep -E '^Cap(Inh|Prm|Eff|Bnd|Amb):' /proc/self/status | grep -v '0000000000000000$'",
      hostKernel: true,
    },
    { name: "no_new_privs is off", attack: "grep -q '^NoNewPrivs:.0' /proc/self/status", hostKernel: true },
    { name: "the step runs as uid 0", attack: '[ "$(id -u)" = 0 ]', hostKernel: true },
    {
      name: "another process's environment shows a platform secret",
      attack:
        "for f in /proc/[0-9]*/environ; do [ \"$f\" = /proc/$$/environ ] || tr '\\0' '\\n' < \"$f\" 2>/dev/null; done | grep -E '^(DATABASE_URL|KILN_AGENT_TOKEN|REDIS_URL|S3_|AUTH_SECRET|KILN_AUTH)'",
    },
    {
      name: "the step's own environment holds a platform secret",
      attack: "env | grep -E '^(DATABASE_URL|KILN_AGENT_TOKEN|REDIS_URL|S3_|AUTH_SECRET|KILN_AUTH)'",
    },
    {
      name: "a platform process (node, postgres, redis) is visible",
      attack: "cat /proc/[0-9]*/comm 2>/dev/null | grep -E '^(node|postgres|redis-server|next-server)'",
    },
  ];
  if (c.rootDevice)
    list.push({
      name: `the host's root disk ${c.rootDevice} is visible`,
      attack: `ls -d ${c.rootDevice}`,
      hostKernel: true,
    });
  for (const [service, port] of Object.entries(c.ports)) {
    for (const address of ["127.0.0.1", ...c.addresses]) {
      list.push({
        name: `${service} ${address}:${port} directly`,
        attack: `busybox nc -w 3 ${address} ${port} </dev/null`,
      });
    }
    for (const host of ["localhost", "127.0.0.1", ...c.addresses]) {
      list.push({ name: `${service} ${host}:${port} through the proxy`, attack: viaProxy(host, port, false) });
      list.push({ name: `${service} ${host}:${port} tunnelled (CONNECT)`, attack: viaProxy(host, port, true) });
    }
  }
  return list;
}

/** The step: one `PROBE <index> <OPEN|DENIED> <output>` line per probe, then PROBES-DONE. */
function probeScript(list: Probe[]): string {
  const lines = list.map(
    (p, i) =>
      `if out=$( ( ${p.attack} ) 2>&1 ); then v=OPEN; else v=DENIED; fi; printf 'PROBE ${i} %s %s\\n' "$v" "$(printf %s "$out" | head -c 300 | tr '\\n' ' ')"`,
  );
  const prelude = [
    "#!/bin/sh",
    'cd "$KILN_WORKSPACE"',
    "proxy=${HTTP_PROXY#http://}; proxy=${proxy%/}; PH=${proxy%:*}; PP=${proxy##*:}",
    // busybox nc half-closes on stdin EOF: the request comes from a script that then relays the answer.
    `req() { printf '%s\\n' "printf '$1'; cat >&2" > "$TMPDIR/kiln-req.sh"; timeout 20 busybox nc "$PH" "$PP" -e sh "$TMPDIR/kiln-req.sh" 2>&1; }`,
  ];
  return [...prelude, ...lines, "echo PROBES-DONE", ""].join("\n");
}

const HOLD_WORKFLOW = `version: 1
jobs:
  - name: hold
    steps:
      - |
        echo "kiln hold secret" > kiln-hold-canary-$KILN_JOB_ID
        sleep 900
`;
const PROBE_WORKFLOW = `version: 1
jobs:
  - name: probe
    steps:
      - sh probe.sh
`;

let platform: Platform;
let control: http.Server;

interface Outcome {
  list: Probe[];
  results: Map<"untrusted" | "trusted", Map<number, { verdict: string; output: string }>>;
}

async function api(method: string, p: string, token: string, body?: unknown, headers: Record<string, string> = {}) {
  const r = await fetch(`${platform.baseUrl()}${p}`, {
    method,
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json", ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await r.text();
  return { status: r.status, json: text ? JSON.parse(text) : null };
}

async function waitForRun(runId: string, token: string, timeoutMs = 180_000): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  let last: any = null;
  while (Date.now() < deadline) {
    const r = await api("GET", `/v1/workflow-runs/${runId}`, token);
    last = r.json;
    if (r.status === 200 && r.json.status === "completed") return r.json;
    await new Promise((res) => setTimeout(res, 250));
  }
  throw new Error(`run ${runId} did not complete: ${JSON.stringify(last)}\n${platform.logs(undefined, 60)}`);
}

async function findFile(dir: string, prefix: string, depth = 4): Promise<string | null> {
  if (depth < 0) return null;
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  for (const e of entries) {
    if (e.isFile() && e.name.startsWith(prefix)) return path.join(dir, e.name);
    if (e.isDirectory() && !e.name.startsWith(".")) {
      const found = await findFile(path.join(dir, e.name), prefix, depth - 1);
      if (found) return found;
    }
  }
  return null;
}

async function jobStdout(jobId: string, token: string): Promise<string> {
  const r = await fetch(`${platform.baseUrl()}/v1/jobs/${jobId}/logs/raw?stream=stdout`, {
    headers: { authorization: `Bearer ${token}` },
  });
  expect(r.status).toBe(200);
  return r.text();
}

function parse(stdout: string): Map<number, { verdict: string; output: string }> {
  const out = new Map<number, { verdict: string; output: string }>();
  for (const line of stdout.split("\n")) {
    const m = /^PROBE (\d+) (OPEN|DENIED) ?(.*)$/.exec(line);
    if (m) out.set(Number(m[1]), { verdict: m[2]!, output: m[3]! });
  }
  return out;
}

async function forkPullRequest(t: SeededTenant): Promise<string> {
  const body = JSON.stringify({
    action: "opened",
    number: 43,
    pull_request: {
      head: { sha: t.git.headSha, ref: "feature", repo: { full_name: "outsider/app" } },
      base: { repo: { full_name: t.repoName } },
      user: { login: "outsider" },
    },
    repository: { full_name: t.repoName },
    sender: { login: "outsider" },
  });
  const hook = await fetch(`${platform.baseUrl()}/v1/webhooks/github`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "x-github-event": "pull_request",
      "x-github-delivery": "hostile-fork-1",
      "x-hub-signature-256": await sign(t.secret, body),
    },
    body,
  });
  expect(hook.status).toBe(202);
  return ((await hook.json()) as { run_id: string }).run_id;
}

function rootDevice(mounts: string): string | null {
  const line = mounts.split("\n").find((l) => l.split(" ")[1] === "/");
  const dev = line?.split(" ")[0] ?? "";
  return dev.startsWith("/dev/") ? dev : null;
}

async function waitUntil(pred: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await pred())) {
    if (Date.now() > deadline)
      throw new Error(`${what} did not happen in ${timeoutMs} ms\n${platform.logs(undefined, 60)}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

function agentEnv(driver: Driver): Record<string, string> {
  const common = {
    KILN_AGENT_SLOTS: "1",
    KILN_CLAIM_WAIT_MS: "2000",
    // The control server is on this host's loopback: allowing internal addresses leaves the
    // policy itself as the only thing between a sandbox and the platform's ports.
    KILN_EGRESS_ALLOW_INTERNAL: "true",
  };
  if (driver === "process") return { ...common, KILN_SANDBOX_DRIVER: "process" };
  return {
    ...common,
    KILN_SANDBOX_DRIVER: "microvm",
    KILN_WARM_POOL_SIZE: "0",
    KILN_MICROVM_ACCEL: "tcg",
    KILN_MICROVM_ASSETS: ASSETS_DIR,
  };
}

/** Starts the platform, holds one sandbox open, runs the untrusted and the trusted probe. */
async function probeThePlatform(driver: Driver, out: Outcome): Promise<void> {
  platform = await startPlatform({
    // The untrusted run must reach the process agents to probe them (ADR 0022: a development pool
    // admits untrusted work on process isolation only when told to).
    untrustedOnProcess: true,
    redis: true,
    s3: true,
    git: true,
    env: { KILN_LEASE_TTL_MS: "30000", KILN_HEARTBEAT_MS: "1000" },
    agentEnv: agentEnv(driver),
  });
  platform.startWorkers();
  await platform.startWeb("web", { healthTimeoutMs: 90_000 });
  // What `npm run up` keeps in its data directory, so reading it is a real leak.
  await writeFile(path.join(platform.dataDir, "instance.json"), '{"canary":"kiln-instance-secret"}\n');
  const ctx: Ctx = {
    dataDir: platform.dataDir,
    ports: {
      web: Number(new URL(platform.baseUrl()).port),
      postgres: Number(new URL(platform.dbUrl).port),
      redis: Number(new URL(platform.redisUrl ?? "redis://127.0.0.1:0").port),
      s3: Number(new URL(platform.s3?.endpoint ?? "http://127.0.0.1:0").port),
    },
    // Every host address, and 10.0.2.2: the host as QEMU's user network shows it to a guest.
    addresses: [
      ...Object.values(os.networkInterfaces())
        .flat()
        .filter((a) => a?.family === "IPv4" && !a.internal)
        .map((a) => a!.address),
      "10.0.2.2",
    ],
    rootDevice: rootDevice(await readFile("/proc/mounts", "utf8")),
    controlPort: (control.address() as AddressInfo).port,
    shadowSha: createHash("sha256")
      .update(await readFile("/etc/shadow"))
      .digest("hex"),
  };
  out.list = probes(ctx);
  const files = {
    ".kiln/workflow.yaml": PROBE_WORKFLOW,
    ".kiln/hold.yaml": HOLD_WORKFLOW,
    "probe.sh": probeScript(out.list),
  };
  const git = platform.git!;
  const victim = await seedTenant(platform.db, git, "victim", files, { member: "dev" });
  const hostile = await seedTenant(platform.db, git, "hostile", files, { member: "dev" });
  await allowEgressHost(platform.db, { orgSlug: "victim", pattern: `localhost:${ctx.controlPort}`, actor: "test" });
  platform.startAgent("agent-a", victim.agentToken);
  platform.startAgent("agent-b", hostile.agentToken);

  // The second org's job holds its sandbox open with a canary in its workspace for the whole probe.
  const hold = await api(
    "POST",
    `/v1/repos/${victim.repoId}/workflow-runs`,
    victim.token,
    { workflow_path: ".kiln/hold.yaml", commit_sha: victim.git.headSha },
    { "idempotency-key": "hold" },
  );
  expect(hold.status).toBe(202);
  const holdRun = hold.json.run_id as string;
  await waitUntil(
    async () => (await api("GET", `/v1/workflow-runs/${holdRun}`, victim.token)).json?.jobs?.[0]?.status === "running",
    240_000,
    "the hold job running",
  );
  if (driver === "process")
    await waitUntil(async () => (await findFile(platform.dataDir, "kiln-hold-canary")) !== null, 60_000, "the canary");
  try {
    const untrusted = await waitForRun(await forkPullRequest(hostile), hostile.token);
    expect(untrusted).toMatchObject({ trust_class: "untrusted" });
    out.results.set("untrusted", parse(await jobStdout(untrusted.jobs[0].id, hostile.token)));
    const trustedRun = await api(
      "POST",
      `/v1/repos/${victim.repoId}/workflow-runs`,
      victim.token,
      { workflow_path: ".kiln/workflow.yaml", commit_sha: victim.git.headSha },
      { "idempotency-key": "trusted-probe" },
    );
    expect(trustedRun.status).toBe(202);
    const trusted = await waitForRun(trustedRun.json.run_id, victim.token);
    expect(trusted).toMatchObject({ trust_class: "trusted" });
    out.results.set("trusted", parse(await jobStdout(trusted.jobs[0].id, victim.token)));
  } finally {
    await api("POST", `/v1/workflow-runs/${holdRun}/cancel`, victim.token, {});
  }
  await waitForRun(holdRun, victim.token);
}

/** The table docs/reliability.md quotes: probe, and what each prober saw. */
async function writeTable(driver: Driver, o: Outcome): Promise<void> {
  const rows = o.list.map((p, i) => {
    const cell = (t: "untrusted" | "trusted") => {
      const v = o.results.get(t)?.get(i)?.verdict.toLowerCase() ?? "not run";
      return driver === "microvm" && p.hostKernel ? `${v} (guest kernel, not asserted)` : v;
    };
    return `| ${p.name.replaceAll("|", "\\|")} | ${driver} | ${cell("untrusted")} | ${cell("trusted")} |`;
  });
  await writeFile(
    path.join(os.tmpdir(), `kiln-hostile-tenant-${driver}.md`),
    ["| probe | driver | untrusted | trusted |", "|---|---|---|---|", ...rows, ""].join("\n"),
  );
}

beforeAll(async () => {
  control = http.createServer((_req, res) => res.end("hello from the control server"));
  await new Promise<void>((resolve) => control.listen(0, "127.0.0.1", () => resolve()));
});
afterAll(() => {
  control?.close();
});

describe.each(DRIVERS)("a hostile tenant on the %s driver", (driver) => {
  const o: Outcome = { list: [], results: new Map() };
  beforeAll(() => probeThePlatform(driver, o), 900_000);
  afterAll(async () => {
    await platform?.stop();
    await writeTable(driver, o);
  }, 60_000);

  describe.each(["untrusted", "trusted"] as const)("%s job", (trust) => {
    it("ran every probe", () => {
      const got = o.results.get(trust);
      expect(got, "the probe job's output").toBeDefined();
      expect([...got!.keys()].sort((a, b) => a - b)).toEqual(o.list.map((_, i) => i));
    });

    it("fails every attack, one by one, and passes every control", () => {
      const got = o.results.get(trust)!;
      for (const [i, p] of o.list.entries()) {
        if (driver === "microvm" && p.hostKernel) continue; // the guest's own kernel: recorded in the table
        const r = got.get(i);
        const expected = p.control === "both" || (p.control === "trusted" && trust === "trusted") ? "OPEN" : "DENIED";
        expect.soft(r?.verdict, `${p.name}: ${r?.output ?? "no output"}`).toBe(expected);
      }
    });
  });
});
