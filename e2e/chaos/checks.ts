// The soak's verdict: every invariant checked against the database (the authority) and, for bytes,
// through the public API. Each check returns how many items it looked at and how many violate it.
import { createHash } from "node:crypto";
import type pg from "pg";
import type { TriggerRecord } from "./driver.ts";
import { BIGLOG_BYTES, BIGLOG_LINE, HONEST, type Kind } from "./workload.ts";

export interface CheckRow {
  name: string;
  checked: number;
  violations: number;
  detail: string;
  /** A figure rather than a pass/fail invariant. */
  info?: boolean;
  /** Not checked in this build (the feature is not there yet). */
  na?: boolean;
}

export interface CheckContext {
  pool: pg.Pool;
  base: string;
  records: TriggerRecord[];
  tokens: Map<Kind, string>;
  features: { logs: boolean; artifacts: boolean };
}

const sample = (items: string[]) => (items.length === 0 ? "" : `e.g. ${items.slice(0, 3).join("; ")}`);

export async function runChecks(ctx: CheckContext): Promise<CheckRow[]> {
  const runKind = new Map<string, Kind>();
  for (const r of ctx.records) for (const id of r.runIds) runKind.set(id, r.kind);
  const rows: CheckRow[] = [
    acceptedCheck(ctx.records),
    await onePerTrigger(ctx),
    await terminal(ctx.pool),
    await honest(ctx.pool, runKind),
    await oneWinner(ctx.pool),
    await fencedPublishedNothing(ctx.pool, ctx.features.artifacts),
  ];
  rows.push(
    ctx.features.artifacts
      ? await artifactBytes(ctx, runKind)
      : {
          name: "bound artifact bytes match their sha256",
          checked: 0,
          violations: 0,
          na: true,
          detail: "n/a: artifacts not in this build",
        },
  );
  rows.push(
    ctx.features.logs
      ? await logBytes(ctx, runKind)
      : {
          name: "acknowledged log bytes = stored bytes",
          checked: 0,
          violations: 0,
          na: true,
          detail: "n/a: logs not in this build",
        },
  );
  rows.push(await outboxDrained(ctx.pool), await infraRatio(ctx.pool));
  return rows;
}

function acceptedCheck(records: TriggerRecord[]): CheckRow {
  const bad = records.filter((r) => !r.accepted).map((r) => `${r.id}: ${r.rejected}`);
  return {
    name: "every trigger accepted (retried with the same id/key)",
    checked: records.length,
    violations: bad.length,
    detail: sample(bad),
  };
}

async function onePerTrigger(ctx: CheckContext): Promise<CheckRow> {
  const bad: string[] = [];
  const accepted = ctx.records.filter((r) => r.accepted);
  const hooks = await ctx.pool.query<{ delivery_id: string; run_id: string | null }>(
    "SELECT delivery_id, run_id FROM webhook_delivery",
  );
  const keys = await ctx.pool.query<{ key: string; run_id: string | null; state: string }>(
    "SELECT key, run_id, state FROM idempotency_key",
  );
  const stored = new Map<string, string | null>([
    ...hooks.rows.map((h) => [h.delivery_id, h.run_id] as const),
    ...keys.rows.map((k) => [k.key, k.run_id] as const),
  ]);
  for (const r of accepted) {
    const ids = [...r.runIds];
    if (ids.length !== 1) bad.push(`${r.id} was answered with ${ids.length} different runs`);
    else if (stored.get(r.id) !== ids[0])
      bad.push(`${r.id} is bound to ${stored.get(r.id)} but was answered ${ids[0]}`);
  }
  const total = Number((await ctx.pool.query<{ n: string }>("SELECT count(*) AS n FROM workflow_run")).rows[0]?.n ?? 0);
  if (total !== accepted.length) bad.push(`${total} runs exist for ${accepted.length} accepted triggers`);
  return {
    name: "exactly one run per accepted trigger",
    checked: accepted.length,
    violations: bad.length,
    detail: sample(bad),
  };
}

async function terminal(pool: pg.Pool): Promise<CheckRow> {
  const r = await pool.query<{ runs: string; open_runs: string; open_jobs: string; open_attempts: string }>(`
    SELECT (SELECT count(*) FROM workflow_run) AS runs,
           (SELECT count(*) FROM workflow_run WHERE status <> 'completed') AS open_runs,
           (SELECT count(*) FROM job_run WHERE status <> 'completed') AS open_jobs,
           (SELECT count(*) FROM attempt WHERE status <> 'completed') AS open_attempts`);
  const x = r.rows[0]!;
  const n = Number(x.open_runs) + Number(x.open_jobs) + Number(x.open_attempts);
  return {
    name: "every run reached a terminal outcome",
    checked: Number(x.runs),
    violations: n,
    detail: n ? `${x.open_runs} runs, ${x.open_jobs} jobs, ${x.open_attempts} attempts not finished` : "",
  };
}

async function honest(pool: pg.Pool, runKind: Map<string, Kind>): Promise<CheckRow> {
  const runs = await pool.query<{ id: string; outcome: string | null }>(
    "SELECT id, outcome FROM workflow_run WHERE status = 'completed'",
  );
  const bad = runs.rows
    .filter((r) => {
      const kind = runKind.get(r.id);
      return !kind || !(HONEST[kind] as readonly (string | null)[]).includes(r.outcome);
    })
    .map((r) => `${r.id} (${runKind.get(r.id) ?? "unknown kind"}) ended ${r.outcome}`);
  return {
    name: "outcome honest for its workload",
    checked: runs.rows.length,
    violations: bad.length,
    detail: sample(bad),
  };
}

async function oneWinner(pool: pg.Pool): Promise<CheckRow> {
  const jobs = Number((await pool.query<{ n: string }>("SELECT count(*) AS n FROM job_run")).rows[0]?.n ?? 0);
  const twice = await pool.query<{ job_id: string }>(
    "SELECT job_id FROM attempt WHERE outcome = 'success' GROUP BY job_id HAVING count(*) > 1",
  );
  const mismatch = await pool.query<{ id: string }>(`
    SELECT j.id FROM job_run j WHERE (j.outcome = 'success') <> EXISTS (SELECT 1 FROM attempt a WHERE a.job_id = j.id AND a.outcome = 'success')`);
  const bad = [
    ...twice.rows.map((r) => `job ${r.job_id} has two successful attempts`),
    ...mismatch.rows.map((r) => `job ${r.id}'s outcome disagrees with its attempts`),
  ];
  return { name: "no job has two winning attempts", checked: jobs, violations: bad.length, detail: sample(bad) };
}

async function fencedPublishedNothing(pool: pg.Pool, artifacts: boolean): Promise<CheckRow> {
  const fenced = Number(
    (
      await pool.query<{ n: string }>(
        "SELECT count(*) AS n FROM attempt a JOIN job_run j ON j.id = a.job_id WHERE a.epoch <> j.current_epoch OR a.outcome <> 'success'",
      )
    ).rows[0]?.n ?? 0,
  );
  const stale = await pool.query<{ id: string }>(
    "SELECT a.id FROM attempt a JOIN job_run j ON j.id = a.job_id WHERE a.outcome = 'success' AND a.epoch <> j.current_epoch",
  );
  const bad = stale.rows.map((r) => `attempt ${r.id} succeeded on a stale epoch`);
  if (artifacts) {
    const bound = await pool.query<{ id: string }>(`
      SELECT b.id FROM artifact_binding b JOIN artifact_generation g ON g.id = b.generation_id JOIN attempt a ON a.id = g.attempt_id
      JOIN job_run j ON j.id = b.job_id WHERE a.outcome IS DISTINCT FROM 'success' OR a.epoch <> j.current_epoch OR a.job_id <> b.job_id`);
    bad.push(...bound.rows.map((r) => `binding ${r.id} points at a non-winning attempt's bytes`));
  }
  return {
    name: "no fenced/losing attempt published anything",
    checked: fenced,
    violations: bad.length,
    detail: sample(bad),
  };
}

async function artifactBytes(ctx: CheckContext, runKind: Map<string, Kind>): Promise<CheckRow> {
  const bound = await ctx.pool.query<{
    job_id: string;
    run_id: string;
    name: string;
    sha256: string;
    size_bytes: string;
  }>(`
    SELECT b.job_id, b.run_id, b.name, g.sha256, g.size_bytes FROM artifact_binding b JOIN artifact_generation g ON g.id = b.generation_id`);
  const bad: string[] = [];
  for (const b of bound.rows) {
    const token = ctx.tokens.get(runKind.get(b.run_id) ?? "artifact");
    const r = await fetch(`${ctx.base}/v1/jobs/${b.job_id}/artifacts/${b.name}`, {
      headers: { authorization: `Bearer ${token}` },
    }).catch(() => null);
    const bytes = r?.ok ? Buffer.from(await r.arrayBuffer()) : null;
    if (!bytes) bad.push(`${b.job_id}/${b.name}: download failed (${r?.status ?? "transport"})`);
    else if (bytes.length !== Number(b.size_bytes) || sha256(bytes) !== b.sha256)
      bad.push(`${b.job_id}/${b.name}: bytes differ from the recorded sha256`);
  }
  return {
    name: "bound artifact bytes match their sha256",
    checked: bound.rows.length,
    violations: bad.length,
    detail: sample(bad),
  };
}

async function logBytes(ctx: CheckContext, runKind: Map<string, Kind>): Promise<CheckRow> {
  const logs = await ctx.pool.query<{
    job_id: string;
    run_id: string;
    epoch: number;
    state: string;
    stdout_bytes: string;
    stderr_bytes: string;
    outcome: string | null;
    attempt_status: string;
  }>(`
    SELECT l.job_id, l.run_id, l.epoch, l.state, l.stdout_bytes, l.stderr_bytes, a.outcome, a.status AS attempt_status
    FROM log_attempt l JOIN attempt a ON a.id = l.attempt_id`);
  const expectedBig = Buffer.from(
    BIGLOG_LINE.repeat(Math.ceil(BIGLOG_BYTES / BIGLOG_LINE.length)).slice(0, BIGLOG_BYTES),
  );
  const bad: string[] = [];
  for (const l of logs.rows) {
    const kind = runKind.get(l.run_id);
    if (l.state === "open") {
      // An open log is still being written (its run is not finished, which the terminal check
      // reports): its acknowledged count moves, so comparing it with a later read would race.
      if (l.attempt_status === "completed") bad.push(`${l.job_id}#${l.epoch}: log still open after its attempt ended`);
      continue;
    }
    for (const stream of ["stdout", "stderr"] as const) {
      const r = await fetch(`${ctx.base}/v1/jobs/${l.job_id}/logs/raw?stream=${stream}&attempt=${l.epoch}`, {
        headers: { authorization: `Bearer ${ctx.tokens.get(kind ?? "ok")}` },
      }).catch(() => null);
      const bytes = r?.ok ? Buffer.from(await r.arrayBuffer()) : null;
      const acked = Number(stream === "stdout" ? l.stdout_bytes : l.stderr_bytes);
      if (!bytes) bad.push(`${l.job_id}#${l.epoch} ${stream}: read failed (${r?.status ?? "transport"})`);
      else if (bytes.length !== acked)
        bad.push(`${l.job_id}#${l.epoch} ${stream}: ${acked} bytes acknowledged, ${bytes.length} stored`);
      else if (kind === "biglog" && stream === "stdout" && l.state === "sealed" && !bytes.equals(expectedBig))
        bad.push(`${l.job_id}#${l.epoch}: sealed log differs from what the step printed`);
      else if (kind === "biglog" && stream === "stdout" && !expectedBig.subarray(0, bytes.length).equals(bytes))
        bad.push(`${l.job_id}#${l.epoch}: stored prefix differs from what the step printed`);
    }
  }
  return {
    name: "acknowledged log bytes = stored bytes",
    checked: logs.rows.filter((l) => l.state !== "open").length,
    violations: bad.length,
    detail: sample(bad),
  };
}

async function outboxDrained(pool: pg.Pool): Promise<CheckRow> {
  const r = await pool.query<{ total: string; stuck: string }>(`
    SELECT count(*) AS total, count(*) FILTER (WHERE published_at IS NULL AND deliver_after < now() - interval '10 seconds') AS stuck FROM outbox`);
  const stuck = Number(r.rows[0]?.stuck ?? 0);
  return {
    name: "outbox has no unpublished committed rows",
    checked: Number(r.rows[0]?.total ?? 0),
    violations: stuck,
    detail: stuck ? `${stuck} rows older than 10 s unpublished` : "",
  };
}

async function infraRatio(pool: pg.Pool): Promise<CheckRow> {
  const r = await pool.query<{ jobs: string; infra: string; fenced: string; attempts: string }>(`
    SELECT (SELECT count(*) FROM job_run WHERE cause IS DISTINCT FROM 'capacity.preempted') AS jobs,
           (SELECT count(*) FROM job_run WHERE outcome = 'platform_failure' AND cause IS DISTINCT FROM 'capacity.preempted') AS infra,
           (SELECT count(*) FROM attempt WHERE outcome = 'platform_failure' AND cause IS DISTINCT FROM 'capacity.preempted') AS fenced,
           (SELECT count(*) FROM attempt) AS attempts`);
  const x = r.rows[0]!;
  const ratio = Number(x.jobs) ? Number(x.infra) / Number(x.jobs) : 0;
  return {
    name: "infrastructure-failure ratio (platform_failure jobs / jobs)",
    checked: Number(x.jobs),
    violations: Number(x.infra),
    info: true,
    detail: `${(ratio * 100).toFixed(1)}%; ${x.fenced} of ${x.attempts} attempts ended platform_failure and were retried or failed the job`,
  };
}

function sha256(b: Buffer): string {
  return createHash("sha256").update(b).digest("hex");
}
