// The cost of rate limiting on the hot paths (issue 33, docs/adr/0044), on and off side by side in
// one run: one platform (durable PostgreSQL, its own Redis, the workers) with two production web
// servers, "on" (limits enabled) and "off" (KILN_RATE_LIMIT_ENABLED=false), measured alternately,
// the order swapped each round so drift in the machine's load falls on both sides alike.
//   1. webhook accept latency (p50/p99): 20 paced senders, 200 deliveries/s offered, workers paused
//      (the accept path alone, as bench/control-plane 1c)
//   2. claims/s: 8 HTTP claimers against 1,024 READY jobs
//   3. API reads/s: 8 clients, GET /v1/workflow-runs/{id} with 8 tokens of one org
// The "on" side's budgets are raised so that nothing is refused: the figures are the cost of
// charging every request to its buckets (one Redis round trip, plus the cached token -> org
// lookup), not of refusals. Usage: npm run bench -- rate-limits [--rounds 3]
import { randomUUID } from "node:crypto";
import { mkdtemp, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { AGENT_ENDPOINTS } from "@kiln/domain";
import { addMember, addRepo, createAgentToken, createApiToken, createOrg, setPoolPolicy } from "@kiln/engine";
import { freePort, startGitServer } from "@kiln/testkit";
import { sign } from "@octokit/webhooks-methods";
import { median, percentile } from "../lib/stats.ts";
import { BenchStack } from "../control-plane/stack.ts";

const rounds = Number(process.argv[process.argv.indexOf("--rounds") + 1] || 3) || 3;
const progress = (m: string) => process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${m}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// Budgets nobody reaches in this bench: every request is charged, none refused.
const HIGH = "10000000";
const ON_ENV: Record<string, string> = Object.fromEntries(
  ["TOKEN", "ORG", "AGENT", "WEBHOOK"].flatMap((s) => [
    [`KILN_RATE_LIMIT_${s}_PER_MINUTE`, HIGH],
    [`KILN_RATE_LIMIT_${s}_BURST`, HIGH],
  ]),
);

/** `n` senders each firing `perSender` requests every `everyMs` from a random phase (open loop). */
async function openLoop(n: number, perSender: number, everyMs: number, f: () => Promise<number>): Promise<number[]> {
  const samples: number[] = [];
  await Promise.all(
    Array.from({ length: n }, async () => {
      await sleep(Math.random() * everyMs);
      const start = performance.now();
      const inflight: Promise<void>[] = [];
      for (let i = 0; i < perSender; i++) {
        const wait = start + i * everyMs - performance.now();
        if (wait > 0) await sleep(wait);
        inflight.push(f().then((t) => void samples.push(t)));
      }
      await Promise.all(inflight);
    }),
  );
  return samples;
}

type Side = "on" | "off";

async function main(): Promise<void> {
  const stack = new BenchStack({ redis: true });
  const git = await startGitServer({ rootDir: await mkdtemp(path.join(os.tmpdir(), "kiln-bench-git-")) });
  await stack.start(await freePort(), { KILN_LEASE_TTL_MS: "600000", KILN_HEARTBEAT_MS: "5000", ...ON_ENV });
  await stack.platform.startWeb("web-off", { env: { KILN_RATE_LIMIT_ENABLED: "false" }, healthTimeoutMs: 60_000 });
  const base: Record<Side, string> = { on: stack.base, off: stack.platform.baseUrl("web-off") };
  const results: Record<string, unknown[]> = { webhook: [], claims: [], reads: [] };
  try {
    await createOrg(stack.db, "bench");
    await addMember(stack.db, { orgSlug: "bench", login: "dev", role: "member", forgeId: 1_000_001 });
    const repo = await git.createRepo("bench.git", {
      ".kiln/workflow.yaml": 'version: 1\njobs:\n  - name: one\n    steps: ["true"]\n',
    });
    const r = await addRepo(
      stack.db,
      {
        orgSlug: "bench",
        name: "bench/app",
        cloneUrl: repo.cloneUrl,
        webhookSecret: "bench-secret",
        workflowPath: ".kiln/workflow.yaml",
      },
      git.sourcePolicy,
    );
    const tokens = await Promise.all(
      Array.from({ length: 8 }, () => createApiToken(stack.db, { orgSlug: "bench", role: "member" })),
    );
    const api = tokens[0]?.token ?? "";

    const push = async (side: Side): Promise<number> => {
      const body = JSON.stringify({
        ref: "refs/heads/main",
        after: repo.headSha,
        deleted: false,
        repository: { full_name: "bench/app" },
        sender: { login: "dev", id: 1_000_001 },
      });
      const headers = {
        "content-type": "application/json",
        "x-github-event": "push",
        "x-github-delivery": randomUUID(),
        "x-hub-signature-256": await sign("bench-secret", body),
        "x-github-hook-installation-target-type": "repository",
        "x-github-hook-installation-target-id": "1",
      };
      const t0 = performance.now();
      const res = await fetch(`${base[side]}/v1/webhooks/github`, { method: "POST", body, headers });
      await res.arrayBuffer();
      if (res.status !== 202) throw new Error(`webhook answered ${res.status}`);
      return performance.now() - t0;
    };
    const trigger = async (workflowPath: string, sha: string): Promise<string> => {
      const res = await fetch(`${base.on}/v1/repos/${r.id}/workflow-runs`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${api}`,
          "content-type": "application/json",
          "idempotency-key": randomUUID(),
        },
        body: JSON.stringify({ workflow_path: workflowPath, commit_sha: sha }),
      });
      if (res.status !== 202) throw new Error(`trigger answered ${res.status}: ${await res.text()}`);
      return ((await res.json()) as { run_id: string }).run_id;
    };
    const pendingDrained = async (ids?: string[]) => {
      for (;;) {
        const rows = ids
          ? await stack.db.$queryRaw<{ n: bigint }[]>`
              SELECT count(*) AS n FROM workflow_run WHERE id = ANY(${ids}::uuid[]) AND status = 'pending'`
          : await stack.db.$queryRaw<{ n: bigint }[]>`SELECT count(*) AS n FROM workflow_run WHERE status = 'pending'`;
        if (rows[0]?.n === 0n) return;
        await sleep(100);
      }
    };
    // Warm both servers' routes (first compile, pools, the limiter's Redis connection).
    for (const side of ["on", "off"] as Side[]) for (let i = 0; i < 20; i++) await push(side);
    const readRun = await trigger(".kiln/workflow.yaml", repo.headSha);

    for (let round = 0; round < rounds; round++) {
      const order: Side[] = round % 2 === 0 ? ["on", "off"] : ["off", "on"];
      for (const side of order) {
        await pendingDrained();
        stack.pauseWorkers(true);
        let accepted: number[];
        try {
          accepted = await openLoop(20, 25, 100, () => push(side));
        } finally {
          stack.pauseWorkers(false);
        }
        results.webhook?.push({ round, side, p50: percentile(accepted, 50), p99: percentile(accepted, 99) });
        progress(`round ${round} ${side}: webhooks ${JSON.stringify(results.webhook?.at(-1))}`);
      }
      for (const side of order) {
        const claims = await claimThroughput(stack, base[side], trigger, repo, `c${round}${side}`, pendingDrained);
        results.claims?.push({ round, side, claimsPerSec: claims });
        progress(`round ${round} ${side}: ${claims.toFixed(0)} claims/s`);
      }
      for (const side of order) {
        let n = 0;
        const t0 = performance.now();
        await Promise.all(
          tokens.map(async (tok) => {
            for (let i = 0; i < 100; i++) {
              const res = await fetch(`${base[side]}/v1/workflow-runs/${readRun}`, {
                headers: { authorization: `Bearer ${tok.token}` },
              });
              await res.arrayBuffer();
              if (res.status !== 200) throw new Error(`read answered ${res.status}`);
              n++;
            }
          }),
        );
        results.reads?.push({ round, side, readsPerSec: (n / (performance.now() - t0)) * 1000 });
        progress(`round ${round} ${side}: reads ${JSON.stringify(results.reads?.at(-1))}`);
      }
    }
  } finally {
    await stack.stop();
    await git.stop();
  }
  const med = (k: string, f: string, side: Side) =>
    median((results[k] as Record<string, number | string>[]).filter((x) => x.side === side).map((x) => Number(x[f])));
  const summary = {
    webhookP99Ms: { on: med("webhook", "p99", "on"), off: med("webhook", "p99", "off") },
    webhookP50Ms: { on: med("webhook", "p50", "on"), off: med("webhook", "p50", "off") },
    claimsPerSec: { on: med("claims", "claimsPerSec", "on"), off: med("claims", "claimsPerSec", "off") },
    readsPerSec: { on: med("reads", "readsPerSec", "on"), off: med("reads", "readsPerSec", "off") },
  };
  const ratios = {
    webhookP99OnOverOff: summary.webhookP99Ms.on / summary.webhookP99Ms.off,
    claimsOnOverOff: summary.claimsPerSec.on / summary.claimsPerSec.off,
    readsOnOverOff: summary.readsPerSec.on / summary.readsPerSec.off,
  };
  const out = { rounds, summary, ratios, raw: results };
  await writeFile(new URL("./last-run.json", import.meta.url), `${JSON.stringify(out, null, 2)}\n`);
  process.stdout.write(`${JSON.stringify({ summary, ratios }, null, 2)}\n`);
}

/** 8 HTTP claimers with their own sessions drain 1,024 READY jobs in a pool of their own: claims/s. */
async function claimThroughput(
  stack: BenchStack,
  base: string,
  trigger: (workflowPath: string, sha: string) => Promise<string>,
  repo: { commit(files: Record<string, string>): Promise<string> },
  pool: string,
  drained: (ids?: string[]) => Promise<void>,
): Promise<number> {
  await setPoolPolicy(stack.db, { name: pool, minIsolation: "process", development: true, actor: "bench" });
  const agentTok = await createAgentToken(stack.db, { pool });
  const yaml = `version: 1\njobs:\n${Array.from({ length: 256 }, (_, i) => `  - {name: j${i}, needs: [], steps: ["true"]}\n`).join("")}`;
  const sha = await repo.commit({ ".kiln/claims.yaml": yaml });
  const runIds: string[] = [];
  for (let i = 0; i < 4; i++) runIds.push(await trigger(".kiln/claims.yaml", sha));
  await drained(runIds);
  await stack.db.$executeRaw`UPDATE job_run SET pool = ${pool} WHERE run_id = ANY(${runIds}::uuid[])`;
  const auth = { authorization: `Bearer ${agentTok.token}`, "content-type": "application/json" };
  const sessions = await Promise.all(
    Array.from({ length: 8 }, async (_, i) => {
      const res = await fetch(`${base}${AGENT_ENDPOINTS.registerSession.path}`, {
        method: "POST",
        headers: auth,
        body: JSON.stringify({
          hostname: `${pool}-${i}`,
          capacity: 1024,
          labels: { os: "linux", arch: "x64", resource_class: "small", isolation: "process" },
        }),
      });
      return ((await res.json()) as { session_id: string }).session_id;
    }),
  );
  let claimed = 0;
  const t0 = performance.now();
  await Promise.all(
    sessions.map(async (s) => {
      for (;;) {
        const res = await fetch(`${base}${AGENT_ENDPOINTS.claim.path}`, {
          method: "POST",
          headers: auth,
          body: JSON.stringify({ session_id: s, claim_request_id: randomUUID(), wait_ms: 0 }),
        });
        if (res.status === 204) return;
        if (res.status !== 200) throw new Error(`claim answered ${res.status}: ${await res.text()}`);
        await res.arrayBuffer();
        claimed++;
      }
    }),
  );
  const perSec = (claimed / (performance.now() - t0)) * 1000;
  await stack.db
    .$executeRaw`UPDATE attempt SET status = 'completed', outcome = 'cancelled', cause = 'bench.cleanup', finished_at = now(), stopped_at = now() WHERE status = 'running'`;
  await stack.db
    .$executeRaw`UPDATE job_run SET status = 'completed', outcome = 'cancelled', cause = 'bench.cleanup' WHERE status <> 'completed'`;
  return perSec;
}

await main();
