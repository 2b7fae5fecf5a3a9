// ID token mint latency through the host agent (issue 16, docs/adr/0024), one run, one machine,
// against the production web server and a durable embedded PostgreSQL:
//   through the agent: a sandbox-side GET $KILN_ID_TOKEN_URL?audience=... on the attempt's egress
//     listener (request-token check, then the agent's POST with its job token, the mint's
//     transaction, the answer back) - what a step pays;
//   control plane only: the agent's POST /v1/agent/jobs/{id}/id-token itself (no sandbox hop);
//   baseline: the same agent's heartbeat POST (one guarded UPDATE), the cheapest job-token call.
// The three are interleaved in rounds so load on the machine hits them alike.
// Usage: npm run bench -- identity [--requests 300]
import { randomUUID } from "node:crypto";
import http from "node:http";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { withTx } from "@kiln/db";
import { parseWorkflow } from "@kiln/domain";
import { addRepo, createAgentToken, createJobs, createOrg, setPoolPolicy } from "@kiln/engine";
import { ControlClient, type JobTicket } from "@kiln/host-agent/control-client";
import { EgressProxy } from "@kiln/host-agent/egress";
import { openIdTokenEndpoint } from "@kiln/host-agent/identity";
import { createLogger } from "@kiln/logger";
import { freePort } from "@kiln/testkit";
import { median, ms, percentile } from "../lib/stats.ts";
import { BenchStack } from "../control-plane/stack.ts";

const arg = (name: string, fallback: string) =>
  process.argv.includes(`--${name}`) ? (process.argv[process.argv.indexOf(`--${name}`) + 1] ?? fallback) : fallback;
const REQUESTS = Number(arg("requests", "300"));
const ROUNDS = 3;

const dir = await mkdtemp(path.join(os.tmpdir(), "kiln-bench-identity-"));
const port = await freePort();
const stack = new BenchStack();
const quiet = createLogger({}, () => undefined);
const proxy = new EgressProxy({ socketDir: path.join(dir, "sock"), allowInternalAddresses: false, logger: quiet });

function getToken(listenerPort: number, requestToken: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: "127.0.0.1",
        port: listenerPort,
        path: "/_kiln/id-token?audience=bench.example",
        headers: { authorization: `Bearer ${requestToken}` },
        agent: false,
      },
      (res) => {
        let body = "";
        res.on("data", (b: Buffer) => (body += b.toString()));
        res.once("end", () =>
          res.statusCode === 200 && body.includes('"value"')
            ? resolve()
            : reject(new Error(`${res.statusCode} ${body}`)),
        );
      },
    );
    req.once("error", reject);
    req.end();
  });
}

async function timeEach(n: number, fn: () => Promise<unknown>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await fn();
    out.push(performance.now() - t);
  }
  return out;
}

const row = (name: string, xs: number[], base: number[]) =>
  console.log(
    `| ${name} | ${ms(percentile(xs, 50))} | ${ms(percentile(xs, 95))} | ${(median(xs) / median(base)).toFixed(2)}x | ${xs.length} |`,
  );

try {
  await stack.start(port, {
    KILN_PUBLIC_URL: `http://127.0.0.1:${port}`,
    KILN_IDENTITY_KEK_FILE: path.join(dir, "identity-kek"),
    // Long leases: the bench's attempt must stay current (and its tokens at the 10-minute cap) throughout.
    KILN_LEASE_TTL_MS: "600000",
    KILN_HEARTBEAT_MS: "5000",
  });
  const db = stack.db;
  const org = await createOrg(db, "bench");
  const repo = await addRepo(
    db,
    {
      orgSlug: "bench",
      name: "bench/app",
      cloneUrl: "file:///nonexistent",
      webhookSecret: "bench-secret",
      workflowPath: ".kiln/workflow.yaml",
    },
    { localReposRoot: "/" },
  );
  await setPoolPolicy(db, { name: "idt", minIsolation: "process", development: true, actor: "bench" });
  const cred = await createAgentToken(db, { pool: "idt" });
  const parsed = parseWorkflow('version: 1\njobs:\n  - name: mint\n    steps: ["true"]\n');
  if (!parsed.ok) throw new Error(parsed.error.message);
  await withTx(db, "bench-seed", async (tx) => {
    const rows = await tx.$queryRaw<{ id: string }[]>`
      INSERT INTO workflow_run (org_id, repo_id, status, trust_class, trigger, ref, commit_sha, workflow_path, workflow_hash, definition, inputs)
      VALUES (${org.id}::uuid, ${repo.id}::uuid, 'running', 'trusted', 'manual', 'refs/heads/main', ${"a".repeat(40)},
              '.kiln/workflow.yaml', ${"b".repeat(64)}, ${JSON.stringify(parsed.definition)}::jsonb, '{}'::jsonb) RETURNING id`;
    await createJobs(tx, { id: rows[0]?.id ?? "", orgId: org.id }, parsed.definition, "idt");
  });
  const client = new ControlClient(stack.base, cred.token);
  const session = await client.registerSession(
    {
      hostname: "bench",
      capacity: 1,
      labels: { os: "linux", arch: "x64", resource_class: "small", isolation: "process" },
    },
    { timeoutMs: 10_000 },
  );
  if (!session.ok) throw new Error(`session: ${JSON.stringify(session)}`);
  const claim = await client.claim(
    { session_id: session.data.session_id, claim_request_id: randomUUID(), wait_ms: 5_000 },
    { timeoutMs: 15_000 },
  );
  if (!claim.ok || !claim.data) throw new Error(`claim: ${JSON.stringify(claim)}`);
  const ticket: JobTicket = claim.data;
  const endpoint = openIdTokenEndpoint({ client, ticket, log: quiet });
  const listener = await proxy.open({
    attemptId: ticket.attemptId,
    trustClass: ticket.trustClass,
    listen: "tcp",
    policy: ticket.egress,
    onDecision: () => undefined,
    onDenied: () => undefined,
    idTokens: endpoint,
  });
  const listenerPort = (listener.address as { port: number }).port;
  const direct = async () => {
    const r = await client.mintIdToken(
      ticket.jobId,
      ticket.jobToken,
      { epoch: ticket.epoch, audience: "bench.example" },
      { timeoutMs: 10_000 },
    );
    if (!r.ok) throw new Error(JSON.stringify(r));
  };
  const beat = async () => {
    const r = await client.heartbeat(ticket.jobId, ticket.jobToken, { epoch: ticket.epoch }, { timeoutMs: 10_000 });
    if (!r.ok) throw new Error(JSON.stringify(r));
  };
  // Warm-up: the first mint creates the signing key; connections and plans get cached.
  for (let i = 0; i < 20; i++) await getToken(listenerPort, endpoint.requestToken);
  const viaAgent: number[] = [];
  const controlOnly: number[] = [];
  const heartbeat: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    viaAgent.push(...(await timeEach(REQUESTS / ROUNDS, () => getToken(listenerPort, endpoint.requestToken))));
    controlOnly.push(...(await timeEach(REQUESTS / ROUNDS, direct)));
    heartbeat.push(...(await timeEach(REQUESTS / ROUNDS, beat)));
  }
  console.log(
    `ID token mint, ${os.cpus().length} cores, load ${os.loadavg()[0]?.toFixed(1)}, ${REQUESTS} each, ${ROUNDS} interleaved rounds`,
  );
  console.log("| call | p50 | p95 | p50 vs heartbeat | n |");
  console.log("|---|---|---|---|---|");
  row("GET $KILN_ID_TOKEN_URL through the agent (sandbox side)", viaAgent, heartbeat);
  row("POST /v1/agent/jobs/{id}/id-token (agent -> control plane)", controlOnly, heartbeat);
  row("POST /v1/agent/jobs/{id}/heartbeat (baseline)", heartbeat, heartbeat);
  await listener.close();
} finally {
  await proxy.close();
  await stack.stop();
  await rm(dir, { recursive: true, force: true });
}
