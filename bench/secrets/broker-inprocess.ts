// The broker's own cost, in process against the bench's PostgreSQL (no HTTP, no agent): one
// deliverSecrets transaction for an attempt whose job declares three set secrets (attempt check,
// three reads, three audit rows, three decryptions) beside the same call for a job that declares
// none (the attempt check alone), alternating in one loop.
import { randomUUID } from "node:crypto";
import { withTx, type Db } from "@kiln/db";
import { parseWorkflow } from "@kiln/domain";
import {
  claimJob,
  createAgentToken,
  createJobs,
  DEFAULT_ENGINE_CONFIG,
  deliverSecrets,
  type KekSource,
  registerSession,
} from "@kiln/engine";
import { percentile } from "../lib/stats.ts";

const CFG = { ...DEFAULT_ENGINE_CONFIG, leaseTtlMs: 600_000 };

async function claimedAttempt(db: Db, org: { id: string; repoId: string }, yaml: string, sessionId: string) {
  const parsed = parseWorkflow(yaml);
  if (!parsed.ok) throw new Error(parsed.error.message);
  const def = parsed.definition;
  await withTx(db, "bench-seed-run", async (tx) => {
    const rows = await tx.$queryRaw<{ id: string }[]>`
      INSERT INTO workflow_run (org_id, repo_id, status, trust_class, trigger, ref, commit_sha, workflow_path, workflow_hash, definition, inputs)
      VALUES (${org.id}::uuid, ${org.repoId}::uuid, 'running', 'trusted', 'manual', 'refs/heads/main', ${"b".repeat(40)}, 'bench.yaml', 'hash',
              ${JSON.stringify(def)}::jsonb, '{}'::jsonb) RETURNING id`;
    await createJobs(tx, { id: rows[0]?.id ?? "", orgId: org.id }, def);
  });
  const r = await claimJob(db, CFG, { sessionId, claimRequestId: randomUUID() });
  if (r.kind !== "claimed") throw new Error(`no claim: ${JSON.stringify(r)}`);
  return { attemptId: r.ticket.attemptId, jobId: r.ticket.jobId, epoch: r.ticket.epoch };
}

export async function benchBrokerInProcess(
  db: Db,
  keks: KekSource,
  org: { id: string; repoId: string },
  n: number,
): Promise<{ with: number[]; without: number[] }> {
  const agent = await createAgentToken(db, { pool: "default" });
  const session = await registerSession(db, CFG, {
    agentTokenId: agent.id,
    pool: "default",
    body: {
      hostname: "bench",
      capacity: 4,
      labels: { os: "linux", arch: "x64", resource_class: "small", isolation: "process" },
    },
  });
  const withSecrets = await claimedAttempt(
    db,
    org,
    'version: 1\njobs:\n  - name: s\n    secrets: [S_ONE, S_TWO, S_THREE]\n    steps: ["true"]\n',
    session.sessionId,
  );
  const without = await claimedAttempt(
    db,
    org,
    'version: 1\njobs:\n  - name: p\n    steps: ["true"]\n',
    session.sessionId,
  );
  const out = { with: [] as number[], without: [] as number[] };
  for (let i = 0; i < n + 10; i++) {
    let t0 = performance.now();
    const got = await deliverSecrets(db, keks, withSecrets, { epoch: withSecrets.epoch });
    const a = performance.now() - t0;
    if (got.delivered.length !== 3) throw new Error(`expected 3 values, got ${got.delivered.length}`);
    t0 = performance.now();
    await deliverSecrets(db, keks, without, { epoch: without.epoch });
    const b = performance.now() - t0;
    // The first ten of each warm the connection pool and the statement caches.
    if (i >= 10) {
      out.with.push(a);
      out.without.push(b);
    }
  }
  return out;
}

export function brokerLines(r: { with: number[]; without: number[] }): string[] {
  const f = (xs: number[], p: number) => percentile(xs, p).toFixed(1);
  return [
    "| broker, in process (deliverSecrets) | n | p50 | p95 |",
    "|---|---|---|---|",
    `| job declaring 3 set secrets (3 reads, 3 audit rows, 3 decryptions) | ${r.with.length} | ${f(r.with, 50)} ms | ${f(r.with, 95)} ms |`,
    `| job declaring none (the attempt check alone) | ${r.without.length} | ${f(r.without, 50)} ms | ${f(r.without, 95)} ms |`,
  ];
}
