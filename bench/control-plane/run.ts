// Control-plane benchmarks (issue #2), each beside a floor measured in the same run:
//   1. webhook accept latency, 20 concurrent senders, closed loop and paced (floor: GET /healthz, same load)
//   2. claim throughput, 8 concurrent HTTP claimers        (floor: GET /healthz throughput, 8 clients)
//   3. READY -> claimed latency with long-polling agents    (from database timestamps; free slots,
//      and under the builds' queueing)
//   4. mixed runs per second, 2 host agents
//   5. trivial one-job builds per second, 2 host agents (Buildbot beside it in one run: npm run bench -- vs-buildbot)
//   6. trigger -> first step with idle agents (Buildbot beside it in one run: npm run bench -- vs-buildbot)
// Usage: npm run bench -- control-plane   (or: tsx bench/control-plane/run.ts [--rounds 3])
import { randomUUID } from "node:crypto";
import { writeFile } from "node:fs/promises";
import { sign } from "@octokit/webhooks-methods";
import { AGENT_ENDPOINTS } from "@kiln/domain";
import { addMember, addRepo, createAgentToken, createApiToken, createOrg, setPoolPolicy } from "@kiln/engine";
import { freePort, startGitServer } from "@kiln/testkit";
import { mkdtemp } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { median, percentile } from "../lib/stats.ts";
import { BenchStack } from "./stack.ts";

const rounds = Number(process.argv[process.argv.indexOf("--rounds") + 1] || 3) || 3;

/** Per-phase milliseconds from every agent's "attempt timings" log line. */
const phases = new Map<string, number[]>();
function collectTimings(line: string): void {
  if (!line.includes('"attempt timings"')) return;
  try {
    const { ms } = JSON.parse(line) as { ms?: Record<string, number> };
    for (const [name, v] of Object.entries(ms ?? {})) phases.set(name, [...(phases.get(name) ?? []), v]);
  } catch {
    // A partial line is not a measurement; the next attempt's line is.
  }
}

const progress = (m: string) => process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${m}\n`);

async function timed<T>(f: () => Promise<T>): Promise<[number, T]> {
  const t0 = performance.now();
  const v = await f();
  return [performance.now() - t0, v];
}

async function concurrent(
  n: number,
  perWorker: number,
  f: (w: number, i: number) => Promise<number>,
): Promise<{ samples: number[]; wallMs: number }> {
  const samples: number[] = [];
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: n }, async (_, w) => {
      for (let i = 0; i < perWorker; i++) samples.push(await f(w, i));
    }),
  );
  return { samples, wallMs: performance.now() - t0 };
}

/** `n` senders, each firing `perSender` requests every `everyMs` from a random phase, not waiting for answers. */
async function openLoop(
  n: number,
  perSender: number,
  everyMs: number,
  f: (w: number, i: number) => Promise<number>,
): Promise<number[]> {
  const samples: number[] = [];
  await Promise.all(
    Array.from({ length: n }, async (_, w) => {
      await new Promise((res) => setTimeout(res, Math.random() * everyMs));
      const start = performance.now();
      const inflight: Promise<void>[] = [];
      for (let i = 0; i < perSender; i++) {
        const due = start + i * everyMs;
        const wait = due - performance.now();
        if (wait > 0) await new Promise((res) => setTimeout(res, wait));
        inflight.push(f(w, i).then((t) => void samples.push(t)));
      }
      await Promise.all(inflight);
    }),
  );
  return samples;
}

async function main(): Promise<void> {
  const stack = new BenchStack();
  const gitRoot = await mkdtemp(path.join(os.tmpdir(), "kiln-bench-git-"));
  const git = await startGitServer({ rootDir: gitRoot });
  // Long leases: the claim benchmark's claimers never heartbeat, and a round that outlives the
  // lease would have its attempts fenced and its jobs re-queued (claims counted twice).
  await stack.start(await freePort(), { KILN_LEASE_TTL_MS: "600000", KILN_HEARTBEAT_MS: "5000" });
  const results: Record<string, unknown> = {};
  try {
    await createOrg(stack.db, "bench");
    // Senders are matched by forge user id (issue 15): the pushes below carry the same id.
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
    const api = await createApiToken(stack.db, { orgSlug: "bench", role: "member" });

    // Warm up the server's route compilation and pools.
    for (let i = 0; i < 20; i++) await fetch(`${stack.base}/healthz`);

    // One signed push delivery (a fresh delivery id each time); resolves to its accept latency.
    const sendPush = async (id: string): Promise<number> => {
      const body = JSON.stringify({
        ref: "refs/heads/main",
        after: repo.headSha,
        deleted: false,
        repository: { full_name: "bench/app" },
        sender: { login: "dev", id: 1_000_001 },
      });
      const sig = await sign("bench-secret", body);
      const [t, res] = await timed(() =>
        fetch(`${stack.base}/v1/webhooks/github`, {
          method: "POST",
          body,
          headers: {
            "content-type": "application/json",
            "x-github-event": "push",
            "x-github-delivery": `${id}-${randomUUID()}`,
            "x-hub-signature-256": sig,
          },
        }),
      );
      if (res.status !== 202) throw new Error(`webhook answered ${res.status}`);
      await res.arrayBuffer();
      return t;
    };
    // A manual run through the API; resolves to its id.
    const trigger = async (workflowPath: string, commitSha: string): Promise<string> => {
      const res = await fetch(`${stack.base}/v1/repos/${r.id}/workflow-runs`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${api.token}`,
          "content-type": "application/json",
          "idempotency-key": randomUUID(),
        },
        body: JSON.stringify({ workflow_path: workflowPath, commit_sha: commitSha }),
      });
      if (res.status !== 202) throw new Error(`trigger answered ${res.status}: ${await res.text()}`);
      return ((await res.json()) as { run_id: string }).run_id;
    };
    const healthz = async (): Promise<number> =>
      (await timed(() => fetch(`${stack.base}/healthz`).then((x) => x.arrayBuffer())))[0];

    progress("stack up; 1. webhook latency");
    // 1. Webhook accept latency.
    const hook = [] as { p50: number; p99: number; floorP50: number; floorP99: number }[];
    for (let round = 0; round < rounds; round++) {
      const floor = await concurrent(20, 25, healthz);
      const accepted = await concurrent(20, 25, (w, i) => sendPush(`r${round}-w${w}-i${i}`));
      hook.push({
        p50: percentile(accepted.samples, 50),
        p99: percentile(accepted.samples, 99),
        floorP50: percentile(floor.samples, 50),
        floorP99: percentile(floor.samples, 99),
      });
    }
    results.webhook = hook;
    // 1b. The same 20 senders as independent sources (open loop): each sends every 100 ms from a
    // random phase, 200 deliveries/s offered in all, whatever the answers' latency. Closed-loop
    // senders above measure saturation: there latency is concurrency / throughput by construction.
    const paced = [] as { p50: number; p99: number; floorP50: number; floorP99: number }[];
    for (let round = 0; round < rounds; round++) {
      const floor = await openLoop(20, 25, 100, healthz);
      const accepted = await openLoop(20, 25, 100, (w, i) => sendPush(`p${round}-w${w}-i${i}`));
      paced.push({
        p50: percentile(accepted, 50),
        p99: percentile(accepted, 99),
        floorP50: percentile(floor, 50),
        floorP99: percentile(floor, 99),
      });
      progress(`round ${round}: paced webhooks ${JSON.stringify(paced.at(-1))}`);
    }
    results.webhookPaced = paced;
    // 1c. The same paced senders with the workers paused: the accept path alone, as when the
    // workers (freezing every accepted run: git, parse, jobs) run on other machines. On this
    // 2-core box they otherwise take the CPU the web answers with.
    const alone = [] as { p50: number; p99: number; floorP50: number; floorP99: number }[];
    for (let round = 0; round < rounds; round++) {
      for (;;) {
        const rows = await stack.db.$queryRaw<
          { n: bigint }[]
        >`SELECT count(*) AS n FROM workflow_run WHERE status = 'pending'`;
        if (rows[0]?.n === 0n) break;
        await new Promise((res) => setTimeout(res, 100));
      }
      stack.pauseWorkers(true);
      try {
        const floor = await openLoop(20, 25, 100, healthz);
        const accepted = await openLoop(20, 25, 100, (w, i) => sendPush(`a${round}-w${w}-i${i}`));
        alone.push({
          p50: percentile(accepted, 50),
          p99: percentile(accepted, 99),
          floorP50: percentile(floor, 50),
          floorP99: percentile(floor, 99),
        });
      } finally {
        stack.pauseWorkers(false);
      }
      progress(`round ${round}: paced webhooks, workers paused ${JSON.stringify(alone.at(-1))}`);
    }
    results.webhookAlone = alone;
    // The accepted runs are frozen by the workers (git read at the pinned commit, parse, jobs).
    const freezeStart = performance.now();
    for (;;) {
      const rows = await stack.db.$queryRaw<
        { n: bigint }[]
      >`SELECT count(*) AS n FROM workflow_run WHERE status = 'pending'`;
      if (rows[0]?.n === 0n) break;
      await new Promise((res) => setTimeout(res, 100));
    }
    const frozen = await stack.db.$queryRaw<{ n: bigint; first: Date; last: Date }[]>`
      SELECT count(*) AS n, min(created_at) AS first, max(a.at) AS last FROM workflow_run r
      JOIN LATERAL (SELECT max(at) AS at FROM transition_event e WHERE e.run_id = r.id AND e.reason = 'frozen') a ON true`;
    results.freeze = {
      runs: Number(frozen[0]?.n ?? 0n),
      drainMs: performance.now() - freezeStart,
      spanMs: (frozen[0]?.last?.getTime() ?? 0) - (frozen[0]?.first?.getTime() ?? 0),
    };
    progress(`freeze backlog drained: ${JSON.stringify(results.freeze)}`);
    // Let the workers drain the frozen runs' dispatch work out of the way of the next part.
    await stack.db
      .$executeRaw`UPDATE job_run SET status = 'completed', outcome = 'cancelled', cause = 'bench.cleanup' WHERE status IN ('pending', 'ready')`;

    progress("2. claim throughput");
    // 2. Claim throughput: 8 concurrent claimers over HTTP against 2,000 parallel READY jobs.
    const claims = [] as { claimsPerSec: number; floorReqPerSec: number; doubleClaims: number }[];
    for (let round = 0; round < rounds; round++) {
      const pool = `claim${round}`;
      await setPoolPolicy(stack.db, { name: pool, minIsolation: "process", development: true, actor: "bench" });
      const agentTok = await createAgentToken(stack.db, { pool });
      const jobs = 2000;
      const yaml = `version: 1\njobs:\n${Array.from({ length: 256 }, (_, i) => `  - {name: j${i}, needs: [], steps: ["true"]}\n`).join("")}`;
      const sha = await repo.commit({ ".kiln/claims.yaml": yaml });
      let created = 0;
      const runIds: string[] = [];
      while (created < jobs) {
        runIds.push(await trigger(".kiln/claims.yaml", sha));
        created += 256;
      }
      progress(`round ${round}: ${runIds.length} runs accepted; waiting for freeze`);
      // Wait for the freezes, then move the jobs into this round's pool.
      for (;;) {
        const rows = await stack.db.$queryRaw<
          { n: bigint }[]
        >`SELECT count(*) AS n FROM workflow_run WHERE id = ANY(${runIds}::uuid[]) AND status = 'pending'`;
        if (rows[0]?.n === 0n) break;
        await new Promise((res) => setTimeout(res, 100));
      }
      await stack.db.$executeRaw`UPDATE job_run SET pool = ${pool} WHERE run_id = ANY(${runIds}::uuid[])`;
      const sessions = await Promise.all(
        Array.from({ length: 8 }, async (_, i) => {
          const res = await fetch(`${stack.base}${AGENT_ENDPOINTS.registerSession.path}`, {
            method: "POST",
            headers: { authorization: `Bearer ${agentTok.token}`, "content-type": "application/json" },
            body: JSON.stringify({
              hostname: `bench-${i}`,
              capacity: 1024,
              labels: { os: "linux", arch: "x64", resource_class: "small", isolation: "process" },
            }),
          });
          return ((await res.json()) as { session_id: string }).session_id;
        }),
      );
      progress(`round ${round}: claiming`);
      let claimed = 0;
      const t0 = performance.now();
      await Promise.all(
        sessions.map(async (s) => {
          for (;;) {
            const res = await fetch(`${stack.base}${AGENT_ENDPOINTS.claim.path}`, {
              method: "POST",
              headers: { authorization: `Bearer ${agentTok.token}`, "content-type": "application/json" },
              body: JSON.stringify({ session_id: s, claim_request_id: randomUUID(), wait_ms: 0 }),
            });
            if (res.status === 204) return;
            if (res.status !== 200) throw new Error(`claim answered ${res.status}: ${await res.text()}`);
            await res.arrayBuffer();
            claimed++;
          }
        }),
      );
      const claimMs = performance.now() - t0;
      const floor = await concurrent(8, 150, healthz);
      const dup = await stack.db.$queryRaw<
        { n: bigint }[]
      >`SELECT count(*) AS n FROM (SELECT job_id FROM attempt GROUP BY job_id HAVING count(*) > 1) d`;
      claims.push({
        claimsPerSec: (claimed / claimMs) * 1000,
        floorReqPerSec: (1200 / floor.wallMs) * 1000,
        doubleClaims: Number(dup[0]?.n ?? 0n),
      });
      await stack.db
        .$executeRaw`UPDATE attempt SET status = 'completed', outcome = 'cancelled', cause = 'bench.cleanup', finished_at = now(), stopped_at = now() WHERE status = 'running'`;
      await stack.db
        .$executeRaw`UPDATE job_run SET status = 'completed', outcome = 'cancelled', cause = 'bench.cleanup' WHERE status <> 'completed'`;
    }
    results.claims = claims;

    progress("3+4. builds with real agents");
    // 3 + 4. Real host agents (process driver): trivial builds/s and READY -> claimed latency.
    const agentTok = await createAgentToken(stack.db, { pool: "default" });
    for (let i = 0; i < 2; i++)
      stack.spawnAgent(agentTok.token, { KILN_AGENT_SLOTS: "4", KILN_CLAIM_WAIT_MS: "20000" }, collectTimings);
    await new Promise((res) => setTimeout(res, 3000));
    const chainSha = await repo.commit({
      ".kiln/chain.yaml": `version: 1\njobs:\n${Array.from({ length: 5 }, (_, i) => `  - name: s${i}\n    steps: ["true"]\n`).join("")}`,
    });
    // 3. READY -> claimed with free slots: one five-job chain at a time, so every job becomes READY
    // (the first from the freeze, the rest from their predecessor's completion) while both agents
    // have idle long-polls waiting. This is dispatch latency; the builds below add queueing.
    const idle = [] as { p50: number; p95: number; n: number }[];
    for (let round = 0; round < rounds; round++) {
      const ids: string[] = [];
      for (let i = 0; i < 8; i++) {
        const id = await trigger(".kiln/chain.yaml", chainSha);
        ids.push(id);
        for (;;) {
          const rows = await stack.db.$queryRaw<
            { status: string }[]
          >`SELECT status FROM workflow_run WHERE id = ${id}::uuid`;
          if (rows[0]?.status === "completed") break;
          await new Promise((res) => setTimeout(res, 20));
        }
      }
      const lat = await stack.db.$queryRaw<{ ms: number }[]>`
        SELECT (EXTRACT(EPOCH FROM (a.claimed_at - j.ready_at)) * 1000)::float8 AS ms
        FROM attempt a JOIN job_run j ON j.id = a.job_id WHERE a.run_id = ANY(${ids}::uuid[])`;
      const xs = lat.map((l) => l.ms);
      idle.push({ p50: percentile(xs, 50), p95: percentile(xs, 95), n: xs.length });
      progress(`round ${round}: idle READY -> claimed ${JSON.stringify(idle.at(-1))}`);
    }
    results.idleDispatch = idle;

    const builds = [] as { buildsPerSec: number; readyToClaimedP50: number; readyToClaimedP95: number; n: number }[];
    for (let round = 0; round < rounds; round++) {
      const runIds: string[] = [];
      const t0 = performance.now();
      for (let i = 0; i < 30; i++) {
        runIds.push(await trigger(i % 3 === 0 ? ".kiln/chain.yaml" : ".kiln/workflow.yaml", chainSha));
      }
      for (;;) {
        const rows = await stack.db.$queryRaw<
          { n: bigint }[]
        >`SELECT count(*) AS n FROM workflow_run WHERE id = ANY(${runIds}::uuid[]) AND status <> 'completed'`;
        if (rows[0]?.n === 0n) break;
        await new Promise((res) => setTimeout(res, 50));
      }
      progress(`round ${round}: ${runIds.length} runs done`);
      const wall = performance.now() - t0;
      const ok = await stack.db.$queryRaw<
        { n: bigint }[]
      >`SELECT count(*) AS n FROM workflow_run WHERE id = ANY(${runIds}::uuid[]) AND outcome = 'success'`;
      if (Number(ok[0]?.n) !== runIds.length) throw new Error(`only ${ok[0]?.n} of ${runIds.length} runs succeeded`);
      const lat = await stack.db.$queryRaw<{ ms: number }[]>`
        SELECT (EXTRACT(EPOCH FROM (a.claimed_at - j.ready_at)) * 1000)::float8 AS ms
        FROM attempt a JOIN job_run j ON j.id = a.job_id WHERE a.run_id = ANY(${runIds}::uuid[]) AND j.job_index > 0`;
      const xs = lat.map((l) => l.ms);
      builds.push({
        buildsPerSec: (runIds.length / wall) * 1000,
        readyToClaimedP50: percentile(xs, 50),
        readyToClaimedP95: percentile(xs, 95),
        n: xs.length,
      });
    }
    results.builds = builds;

    // 5. Buildbot's figure is trivial single-step builds per second: 40 one-job runs at once.
    const singles = [] as { buildsPerSec: number; triggerToStepP50: number }[];
    for (let round = 0; round < rounds; round++) {
      const t0 = performance.now();
      const runIds = await Promise.all(
        Array.from({ length: 40 }, async () => {
          return await trigger(".kiln/workflow.yaml", chainSha);
        }),
      );
      for (;;) {
        const rows = await stack.db.$queryRaw<
          { n: bigint }[]
        >`SELECT count(*) AS n FROM workflow_run WHERE id = ANY(${runIds}::uuid[]) AND status <> 'completed'`;
        if (rows[0]?.n === 0n) break;
        await new Promise((res) => setTimeout(res, 20));
      }
      const wall = performance.now() - t0;
      const ok = await stack.db.$queryRaw<
        { n: bigint }[]
      >`SELECT count(*) AS n FROM workflow_run WHERE id = ANY(${runIds}::uuid[]) AND outcome = 'success'`;
      if (Number(ok[0]?.n) !== runIds.length) throw new Error(`only ${ok[0]?.n} of ${runIds.length} runs succeeded`);
      const lat = await stack.db.$queryRaw<
        { ms: number }[]
      >`SELECT (EXTRACT(EPOCH FROM (a.started_at - r.created_at)) * 1000)::float8 AS ms FROM attempt a JOIN workflow_run r ON r.id = a.run_id WHERE a.run_id = ANY(${runIds}::uuid[])`;
      singles.push({
        buildsPerSec: (runIds.length / wall) * 1000,
        triggerToStepP50: percentile(
          lat.map((l) => l.ms),
          50,
        ),
      });
      progress(`round ${round}: single-job builds ${JSON.stringify(singles.at(-1))}`);
    }
    results.singles = singles;

    // 6. Trigger -> first step with idle agents, one run at a time (Buildbot: npm run bench -- vs-buildbot).
    const solo: number[] = [];
    for (let i = 0; i < 10 * rounds; i++) {
      const id = await trigger(".kiln/workflow.yaml", chainSha);
      for (;;) {
        const rows = await stack.db.$queryRaw<
          { status: string }[]
        >`SELECT status FROM workflow_run WHERE id = ${id}::uuid`;
        if (rows[0]?.status === "completed") break;
        await new Promise((res) => setTimeout(res, 20));
      }
      const lat = await stack.db.$queryRaw<
        { ms: number }[]
      >`SELECT (EXTRACT(EPOCH FROM (a.started_at - r.created_at)) * 1000)::float8 AS ms FROM attempt a JOIN workflow_run r ON r.id = a.run_id WHERE a.run_id = ${id}::uuid`;
      if (lat[0]) solo.push(lat[0].ms);
    }
    results.triggerToStep = { p50: percentile(solo, 50), p95: percentile(solo, 95), n: solo.length };
    // Where a build's time goes, phase by phase on the agent (its "attempt timings" line): the
    // breakdown that says which phase a change in builds/s came from.
    results.agentPhasesP50 = Object.fromEntries(
      [...phases].map(([name, xs]) => [name, { p50: percentile(xs, 50), p95: percentile(xs, 95), n: xs.length }]),
    );
  } finally {
    await stack.stop();
    await git.stop();
  }
  const h = results.webhook as { p50: number; p99: number; floorP50: number; floorP99: number }[];
  const hp = results.webhookPaced as { p50: number; p99: number; floorP50: number; floorP99: number }[];
  const ha = results.webhookAlone as { p50: number; p99: number; floorP50: number; floorP99: number }[];
  const c = results.claims as { claimsPerSec: number; floorReqPerSec: number; doubleClaims: number }[];
  const d = results.idleDispatch as { p50: number; p95: number }[];
  const sg = results.singles as { buildsPerSec: number }[];
  const tts = results.triggerToStep as { p50: number; p95: number };
  const b = results.builds as { buildsPerSec: number; readyToClaimedP50: number; readyToClaimedP95: number }[];
  const f = (x: number) => x.toFixed(1);
  console.log(`| metric (median of ${rounds} rounds) | Kiln | floor in same run | ratio | target |
|---|---|---|---|---|
| webhook accept p50, 20 closed-loop senders (saturation) | ${f(median(h.map((x) => x.p50)))} ms | ${f(median(h.map((x) => x.floorP50)))} ms (GET /healthz) | ${f(median(h.map((x) => x.p50 / x.floorP50)))}x | |
| webhook accept p99, 20 closed-loop senders (saturation) | ${f(median(h.map((x) => x.p99)))} ms | ${f(median(h.map((x) => x.floorP99)))} ms (GET /healthz) | ${f(median(h.map((x) => x.p99 / x.floorP99)))}x | < 50 ms |
| webhook accept p50, 20 paced senders (200/s offered) | ${f(median(hp.map((x) => x.p50)))} ms | ${f(median(hp.map((x) => x.floorP50)))} ms (GET /healthz) | ${f(median(hp.map((x) => x.p50 / x.floorP50)))}x | |
| webhook accept p99, 20 paced senders (200/s offered) | ${f(median(hp.map((x) => x.p99)))} ms | ${f(median(hp.map((x) => x.floorP99)))} ms (GET /healthz) | ${f(median(hp.map((x) => x.p99 / x.floorP99)))}x | < 50 ms |
| webhook accept p50, 20 paced senders, workers paused | ${f(median(ha.map((x) => x.p50)))} ms | ${f(median(ha.map((x) => x.floorP50)))} ms (GET /healthz) | ${f(median(ha.map((x) => x.p50 / x.floorP50)))}x | |
| webhook accept p99, 20 paced senders, workers paused | ${f(median(ha.map((x) => x.p99)))} ms | ${f(median(ha.map((x) => x.floorP99)))} ms (GET /healthz) | ${f(median(ha.map((x) => x.p99 / x.floorP99)))}x | < 50 ms |
| claims/s, 8 concurrent claimers | ${f(median(c.map((x) => x.claimsPerSec)))} | ${f(median(c.map((x) => x.floorReqPerSec)))} req/s (GET /healthz) | ${median(c.map((x) => x.claimsPerSec / x.floorReqPerSec)).toFixed(2)} | >= 200/s |
| double claims | ${c.reduce((s, x) => s + x.doubleClaims, 0)} | | | 0 |
| READY -> claimed p50, free slots | ${f(median(d.map((x) => x.p50)))} ms | | | |
| READY -> claimed p95, free slots | ${f(median(d.map((x) => x.p95)))} ms | | | < 100 ms |
| READY -> claimed p50, 30 runs queued on 8 slots | ${f(median(b.map((x) => x.readyToClaimedP50)))} ms | | | |
| READY -> claimed p95, 30 runs queued on 8 slots | ${f(median(b.map((x) => x.readyToClaimedP95)))} ms | | | |
| webhook -> frozen runs/s (${(results.freeze as { runs: number }).runs} accepted in bursts) | ${f((results.freeze as { runs: number; spanMs: number }).runs / ((results.freeze as { spanMs: number }).spanMs / 1000))} | | | |
| trivial one-job builds/s, 40 at once, 2 agents x 4 slots | ${f(median(sg.map((x) => x.buildsPerSec)))} | Buildbot: npm run bench -- vs-buildbot (same-run ratios only) | | beat peer |
| trigger (API accept) -> first step p50 / p95, idle agents | ${f(tts.p50)} / ${f(tts.p95)} ms | Buildbot: npm run bench -- vs-buildbot (same-run ratios only) | | beat peer |
| mixed runs/s (1 in 3 a five-job chain), 2 agents x 4 slots | ${f(median(b.map((x) => x.buildsPerSec)))} | Buildbot: npm run bench -- vs-buildbot (same-run ratios only) | | beat peer |`);
  await writeFile(
    path.join(path.dirname(new URL(import.meta.url).pathname), "last-run.json"),
    JSON.stringify(results, null, 2),
  );
}

await main();
// Let stdout drain before exiting (a pipe may still hold the table).
process.stdout.write("", () => process.exit(0));
