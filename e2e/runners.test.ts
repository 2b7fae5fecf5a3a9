import { mkdtemp, readFile, rm, stat } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { createApiToken } from "@kiln/engine";
import Ajv2020 from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ProtocolAgent } from "./faults/support/protocol-agent.ts";
import { Platform, type Proc } from "./support/platform.ts";
import type { SeededTenant } from "./support/seed-tenant.ts";

// Issue 22, black box against `next start`, the workers and real host agents: an org admin makes an
// org pool and a registration token; `npm run agent -- register` spends it (a second use is refused)
// and the agent then runs from its 0600 state directory alone; a job by label runs on it; drain
// holds new work; revoking a host mid-job ends its session and the job is fenced and retried on
// another host; injected platform failures quarantine a host automatically until an admin lifts it.
// Another org's admin is refused everywhere, and answers are checked against the served document.

const p = new Platform();
let acme: SeededTenant;
let admin = "";
let rivalAdmin = "";
let stateRoot = "";
const agents = new Map<string, Proc>();
const ajv = addFormats(new Ajv2020({ strict: false }));
let doc: { paths: Record<string, Record<string, { responses: Record<string, any> }>> };

const FILES = {
  ".kiln/quick.yaml":
    'version: 1\njobs:\n  - name: train\n    runs_on: {pool: acme/gpu, labels: [gpu]}\n    steps: ["echo trained on $(hostname)"]\n',
  ".kiln/slow.yaml":
    'version: 1\njobs:\n  - name: train\n    runs_on: {pool: acme/gpu, labels: [gpu]}\n    steps: ["sleep 8", "echo slow done"]\n',
};

/** The body checked against the served OpenAPI document's schema for (method, template, status). */
function documented<T>(method: string, template: string, status: number, body: unknown): T {
  const schema = doc.paths[template]?.[method]?.responses[String(status)]?.content?.["application/json"]?.schema;
  if (!schema) throw new Error(`no ${status} schema for ${method} ${template}`);
  const validate = ajv.compile(schema);
  if (!validate(body)) throw new Error(`${method} ${template} ${status}: ${ajv.errorsText(validate.errors)}`);
  return body as T;
}

async function trigger(workflow: string, key: string): Promise<string> {
  const r = await p.api(
    "POST",
    `/v1/repos/${acme.repoId}/workflow-runs`,
    acme.token,
    { workflow_path: workflow, commit_sha: acme.git.headSha },
    { "idempotency-key": key },
  );
  expect(r.status).toBe(202);
  return r.json.run_id;
}

async function newToken(): Promise<string> {
  const r = await p.api("POST", "/v1/orgs/acme/runners/registration-tokens", admin, { pool: "gpu" });
  expect(r.status).toBe(201);
  return documented<{ token: string }>("post", "/v1/orgs/{org}/runners/registration-tokens", 201, r.json).token;
}

/** Registers a host through the agent's own command and starts it from the state directory. */
async function registerAndStart(name: string): Promise<{ dir: string; runnerId: string }> {
  const dir = path.join(stateRoot, name);
  const token = await newToken();
  const r = await p.agentCommand([
    "register",
    "--url",
    p.base,
    "--token",
    token,
    "--pool",
    "gpu",
    "--labels",
    "gpu,cuda12",
    "--name",
    name,
    "--state-dir",
    dir,
  ]);
  expect(r.code, r.out).toBe(0);
  expect(r.out).not.toContain("kagent_");
  const state = JSON.parse(await readFile(path.join(dir, "agent-state.json"), "utf8"));
  agents.set(name, p.startRegisteredAgent(name, dir));
  return { dir, runnerId: state.runner_id };
}

type Runner = { id: string; name: string; state: string; labels: string[]; slots: { in_use: number; total: number } };

async function runners(): Promise<Runner[]> {
  const r = await p.api("GET", "/v1/orgs/acme/runners", admin);
  expect(r.status).toBe(200);
  return documented<{ runners: Runner[] }>("get", "/v1/orgs/{org}/runners", 200, r.json).runners;
}

async function act(runnerId: string, action: string, reason?: string) {
  const r = await p.api("POST", `/v1/orgs/acme/runners/${runnerId}/actions`, admin, {
    action,
    ...(reason ? { reason } : {}),
  });
  expect(r.status, JSON.stringify(r.json)).toBe(200);
  return documented<Runner>("post", "/v1/orgs/{org}/runners/{runner_id}/actions", 200, r.json);
}

async function until<T>(what: string, f: () => Promise<T | null | undefined | false>, ms = 60_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}\n${p.logs()}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

beforeAll(async () => {
  await p.start();
  stateRoot = await mkdtemp(path.join(os.tmpdir(), "kiln-runners-e2e-"));
  acme = await p.seedTenant("acme", FILES);
  await p.seedTenant("rival", { ".kiln/workflow.yaml": FILES[".kiln/quick.yaml"] });
  admin = (await createApiToken(p.db, { orgSlug: "acme", role: "admin" })).token;
  rivalAdmin = (await createApiToken(p.db, { orgSlug: "rival", role: "admin" })).token;
  doc = (await p.api("GET", "/v1/openapi.json", null)).json;
  const pool = await p.api("POST", "/v1/orgs/acme/pools", admin, { name: "gpu", isolation: "process" });
  expect(pool.status).toBe(201);
  expect(documented("post", "/v1/orgs/{org}/pools", 201, pool.json)).toMatchObject({ name: "acme/gpu", org: "acme" });
}, 180_000);

afterAll(async () => {
  await p.stop();
  if (stateRoot) await rm(stateRoot, { recursive: true, force: true });
});

describe("self-hosted runners", { timeout: 240_000 }, () => {
  it("registers with a token (spent: a second use is refused) and runs a job by label from the state directory", async () => {
    const dir = path.join(stateRoot, "gpu-1");
    const token = await newToken();
    const args = ["register", "--url", p.base, "--token", token, "--pool", "gpu", "--labels", "gpu", "--name", "gpu-1"];
    const first = await p.agentCommand([...args, "--state-dir", dir]);
    expect(first.code, first.out).toBe(0);
    expect(first.out).toContain("in pool acme/gpu of acme");
    const again = await p.agentCommand(args, { KILN_AGENT_STATE_DIR: path.join(stateRoot, "gpu-1b") });
    expect(again.code).toBe(1);
    expect(again.out).toContain("REGISTRATION.TOKEN_SPENT");
    const file = path.join(dir, "agent-state.json");
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    const state = JSON.parse(await readFile(file, "utf8"));
    const agent = p.startRegisteredAgent("gpu-1", dir);
    agents.set("gpu-1", agent);
    // The credential is in the state file only, never in the agent's environment.
    const environ = await readFile(`/proc/${agent.child.pid}/environ`, "utf8");
    expect(environ).not.toContain(state.credential);
    expect(environ).not.toContain("KILN_AGENT_TOKEN");

    const runId = await trigger(".kiln/quick.yaml", "quick-1");
    const done = await p.waitForRun(runId, acme.token, (r) => r.status === "completed", 90_000);
    expect(done.outcome).toBe("success");
    expect(done.jobs[0].attempts.map((a: any) => a.host)).toEqual(["gpu-1"]);
    const [h] = await runners();
    expect(h).toMatchObject({ id: state.runner_id, name: "gpu-1", state: "online", labels: ["gpu"], pool: "acme/gpu" });
    expect(h?.slots.total).toBe(2);
  });

  it("refuses another org's admin, a member, other orgs' pools and an incompatible agent", async () => {
    const [h] = await runners();
    const id = h?.id ?? "";
    const list = await p.api("GET", "/v1/orgs/acme/runners", rivalAdmin);
    expect([list.status, list.json.error.code]).toEqual([404, "ORG.NOT_FOUND"]);
    const own = await p.api("GET", "/v1/orgs/rival/runners", rivalAdmin);
    expect(own.json.runners).toEqual([]);
    for (const [method, url] of [
      ["DELETE", `/v1/orgs/rival/runners/${id}`],
      ["POST", `/v1/orgs/rival/runners/${id}/actions`],
    ] as const) {
      const r = await p.api(method, url, rivalAdmin, method === "POST" ? { action: "drain" } : undefined);
      expect([r.status, r.json.error.code]).toEqual([404, "RUNNER.NOT_FOUND"]);
    }
    const tok = await p.api("POST", "/v1/orgs/rival/runners/registration-tokens", rivalAdmin, { pool: "acme/gpu" });
    expect([tok.status, tok.json.error.code]).toEqual([404, "POOL.NOT_FOUND"]);
    const shared = await p.api("POST", "/v1/orgs/acme/runners/registration-tokens", admin, { pool: "default" });
    expect([shared.status, shared.json.error.code]).toEqual([404, "POOL.NOT_FOUND"]);
    const member = await p.api("GET", "/v1/orgs/acme/runners", acme.token);
    expect([member.status, member.json.error.code]).toEqual([403, "AUTH.FORBIDDEN"]);
    expect((await runners()).find((r) => r.id === id)?.state).toBe("online");

    const state = JSON.parse(await readFile(path.join(stateRoot, "gpu-1", "agent-state.json"), "utf8"));
    const old = new ProtocolAgent(p.base, state.credential, "from-the-future");
    const r = await old.post("/v1/agent/sessions", state.credential, {
      hostname: "from-the-future",
      capacity: 1,
      labels: { os: "linux", arch: "x64", resource_class: "small", isolation: "process" },
      protocol_version: 99,
    });
    expect(r.status).toBe(400);
    expect(r.json.error.code).toBe("AGENT.PROTOCOL_INCOMPATIBLE");
    expect(r.json.error.message).toMatch(/agent protocol version 99 .*\(protocol 1\.\.3\)/);
  });

  it("drains: a draining host claims nothing new until undrained", async () => {
    const [h] = await runners();
    expect((await act(h?.id ?? "", "drain")).state).toBe("draining");
    // The standing is cached for a second per web process; a few long-polls later nothing was taken.
    await new Promise((r) => setTimeout(r, 1_500));
    const runId = await trigger(".kiln/quick.yaml", "drained-1");
    await new Promise((r) => setTimeout(r, 6_000));
    const waiting = await p.api("GET", `/v1/workflow-runs/${runId}`, acme.token);
    expect(waiting.json.jobs[0].status).toBe("ready");
    expect(waiting.json.jobs[0].attempts).toEqual([]);
    expect((await act(h?.id ?? "", "undrain")).state).toBe("online");
    const done = await p.waitForRun(runId, acme.token, (r) => r.status === "completed", 60_000);
    expect(done.outcome).toBe("success");
  });

  it("revokes a host mid-job: its session ends, the job is fenced and retried on another host", async () => {
    const first = (await runners()).find((r) => r.name === "gpu-1");
    const second = await registerAndStart("gpu-2");
    // gpu-2 waits (drained) until the job is running on gpu-1.
    await until("gpu-2 online", async () =>
      (await runners()).find((r) => r.id === second.runnerId && r.slots.total > 0),
    );
    await act(second.runnerId, "drain");
    await new Promise((r) => setTimeout(r, 1_500));
    const runId = await trigger(".kiln/slow.yaml", "slow-1");
    await p.waitForRun(
      runId,
      acme.token,
      (r) => r.jobs?.[0]?.attempts?.[0]?.host === "gpu-1" && r.jobs[0].status === "running",
    );
    await act(second.runnerId, "undrain");
    const del = await p.api("DELETE", `/v1/orgs/acme/runners/${first?.id}`, admin);
    expect(del.status).toBe(200);
    expect(documented<Runner>("delete", "/v1/orgs/{org}/runners/{runner_id}", 200, del.json).state).toBe("revoked");
    // Its session ends within one lease (3 s here): the agent's next claim is refused and it exits.
    const gpu1 = agents.get("gpu-1");
    await until("gpu-1 to exit", async () => gpu1 && !gpu1.alive(), 30_000);
    expect(gpu1?.output()).toContain("rejected the host credential");
    const done = await p.waitForRun(runId, acme.token, (r) => r.status === "completed", 120_000);
    expect(done.outcome).toBe("success");
    const attempts = done.jobs[0].attempts.map((a: any) => [a.host, a.outcome]);
    expect(attempts).toEqual([
      ["gpu-1", "platform_failure"],
      ["gpu-2", "success"],
    ]);
    // The revoked credential claims nothing, even through the protocol directly.
    const state = JSON.parse(await readFile(path.join(stateRoot, "gpu-1", "agent-state.json"), "utf8"));
    const ghost = new ProtocolAgent(p.base, state.credential, "ghost");
    const reg = await ghost.post("/v1/agent/sessions", state.credential, {
      hostname: "ghost",
      capacity: 1,
      labels: { os: "linux", arch: "x64", resource_class: "small", isolation: "process" },
    });
    expect([reg.status, reg.json.error.code]).toEqual([401, "AUTH.CREDENTIAL_REVOKED"]);
  });

  it("quarantines a host automatically after injected platform failures, until an admin lifts it", async () => {
    // A scripted agent with a registered credential reports platform failures for three jobs.
    const token = await newToken();
    const dir = path.join(stateRoot, "flaky");
    const r = await p.agentCommand([
      "register",
      "--url",
      p.base,
      "--token",
      token,
      "--pool",
      "gpu",
      "--labels",
      "gpu",
      "--name",
      "flaky",
      "--state-dir",
      dir,
    ]);
    expect(r.code, r.out).toBe(0);
    const state = JSON.parse(await readFile(path.join(dir, "agent-state.json"), "utf8"));
    // The other host is drained so the scripted one gets every job.
    const gpu2 = (await runners()).find((x) => x.name === "gpu-2");
    await act(gpu2?.id ?? "", "drain");
    await new Promise((res) => setTimeout(res, 1_500));
    const flaky = new ProtocolAgent(p.base, state.credential, "flaky");
    const session = await flaky.post("/v1/agent/sessions", state.credential, {
      hostname: "flaky",
      capacity: 1,
      labels: { os: "linux", arch: "x64", resource_class: "small", isolation: "process" },
      runner_labels: ["gpu"],
      protocol_version: 2,
    });
    expect(session.status).toBe(201);
    expect(session.json).toMatchObject({ runner_id: state.runner_id, protocol_version: 3 });
    flaky.sessionId = session.json.session_id;
    for (let i = 0; i < 3; i++) {
      await trigger(".kiln/quick.yaml", `flaky-${i}`);
      const ticket = await flaky.claim(30_000);
      if (!ticket) throw new Error(`no ticket for failure ${i}\n${p.logs()}`);
      const c = await flaky.complete(ticket, "platform_failure", { cause: "sandbox.create_failed" });
      expect(c.status, JSON.stringify(c.json)).toBe(200);
    }
    const quarantined = (await runners()).find((x) => x.id === state.runner_id);
    expect(quarantined).toMatchObject({
      state: "quarantined",
      quarantine: {
        kind: "platform_failures",
        reason: "3 platform failures attributed to this host within 10 minutes",
        by: "system:auto-quarantine",
      },
    });
    const refused = await flaky.post("/v1/agent/claims", state.credential, {
      session_id: flaky.sessionId,
      claim_request_id: "quarantined-claim-1",
      wait_ms: 0,
    });
    expect([refused.status, refused.json.error.code]).toEqual([409, "RUNNER.QUARANTINED"]);
    expect(refused.json.error.message).toContain("3 platform failures");
    const audit = await p.api("GET", "/v1/orgs/acme/audit-events?kind=runner.", admin);
    expect(audit.json.events.map((e: any) => e.kind)).toEqual(
      expect.arrayContaining(["runner.registered", "runner.drained", "runner.revoked", "runner.quarantined"]),
    );
    // Lifted by an admin: the host claims again (the retried jobs are waiting for it).
    await act(state.runner_id, "unquarantine");
    await new Promise((res) => setTimeout(res, 1_500));
    expect(await flaky.claim(30_000)).not.toBeNull();
  });
});
