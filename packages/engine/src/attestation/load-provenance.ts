// Loads everything a job's provenance says, from control-plane records only (issue 17): the run as
// frozen, the winning attempt, the bindings, what the completion transaction resolved for restores,
// the cache entries the control plane granted, and the digests of the logs it stored. Nothing the
// job reported about itself (exit codes, step names, its own digests) enters the statement.
// Set-based: a batch of jobs costs four queries plus each job's log read (ADR 0027, "Batches").
import { createHash } from "node:crypto";
import { canonicalJson, type BuildHost, type ProvenanceInput, type WorkflowDefinition } from "@kiln/domain";
import { readLogChunks, type LogArchiveReader } from "../logs/index.ts";
import type { SqlPool } from "../shared/sql-pool.ts";

export interface ProvenanceRecords {
  input: ProvenanceInput;
  orgId: string;
  runId: string;
  attemptId: string;
  subjects: { generationId: string; name: string; sha256: string }[];
}

export interface JobRef {
  jobId: string;
  epoch: number;
}

/** Null: the job did not succeed at that epoch or bound nothing. An Error: this job's load failed. */
export type LoadOutcome = ProvenanceRecords | null | Error;

interface JobRow {
  ord: string;
  job_id: string;
  job_name: string;
  pool: string;
  run_id: string;
  org_id: string;
  org_slug: string;
  ref: string | null;
  commit_sha: string;
  workflow_path: string;
  workflow_hash: string | null;
  inputs: unknown;
  trust_class: string;
  job_def: WorkflowDefinition["jobs"][number] | null;
  full_name: string;
  clone_url: string;
  attempt_id: string;
  epoch: number;
  started_at: Date | null;
  claimed_at: Date;
  finished_at: Date | null;
  isolation: string | null;
  self_hosted: boolean;
  pool_min_isolation: string;
  log_next_seq: number | null;
}

type Restored = ProvenanceInput["restored"][number];

/**
 * One outcome per ref, in order. A job that did not succeed at `epoch` or bound nothing gets null:
 * a stale attempt's report, a retried job or a failed one never gets a statement.
 */
export async function loadProvenanceBatch(
  sql: SqlPool,
  logs: { pool: SqlPool; archive: LogArchiveReader },
  instanceUri: string,
  refs: JobRef[],
): Promise<LoadOutcome[]> {
  const { rows: jobs } = await sql.query<JobRow & Record<string, unknown>>({
    name: "attest-load-jobs",
    text: `SELECT w.ord::text AS ord, j.id AS job_id, j.name AS job_name, j.pool,
             r.id AS run_id, r.org_id, o.slug AS org_slug, r.ref, r.commit_sha, r.workflow_path, r.workflow_hash,
             r.inputs, r.trust_class, r.definition->'jobs'->j.job_index AS job_def, rp.full_name, rp.clone_url,
             a.id AS attempt_id, a.epoch, a.started_at, a.claimed_at, a.finished_at,
             s.labels->>'isolation' AS isolation, l.next_seq AS log_next_seq,
             -- Who ran it, from what operators and registrations wrote (issue 28), never the agent's
             -- report: a runner an org registered, or any host of an org pool, is self-hosted; a host
             -- whose runner row cannot be found is not taken for a platform host either.
             (h.id IS NULL OR h.registration_token_id IS NOT NULL OR h.created_by LIKE 'registration:%'
               OR p.scope = 'org') AS self_hosted,
             COALESCE(p.min_isolation, 'microvm') AS pool_min_isolation
           FROM unnest($1::uuid[], $2::int[]) WITH ORDINALITY AS w(job_id, epoch, ord)
           JOIN job_run j ON j.id = w.job_id
           JOIN workflow_run r ON r.id = j.run_id
           JOIN org o ON o.id = r.org_id
           JOIN repo rp ON rp.id = r.repo_id
           JOIN attempt a ON a.job_id = j.id AND a.epoch = j.current_epoch
           LEFT JOIN agent_session s ON s.id = a.session_id
           LEFT JOIN runner h ON h.id = s.runner_id
           LEFT JOIN pool p ON p.name = s.pool
           LEFT JOIN log_attempt l ON l.attempt_id = a.id
           WHERE j.status = 'completed' AND j.outcome = 'success' AND j.current_epoch = w.epoch AND a.outcome = 'success'`,
    values: [refs.map((r) => r.jobId), refs.map((r) => r.epoch)],
  });
  if (jobs.length === 0) return refs.map(() => null);

  const { rows: subjects } = await sql.query<{ job_id: string; generation_id: string; name: string; sha256: string }>({
    name: "attest-load-subjects",
    text: `SELECT w.job_id, g.id AS generation_id, b.name, g.sha256
           FROM unnest($1::uuid[], $2::uuid[]) AS w(job_id, attempt_id)
           JOIN artifact_binding b ON b.job_id = w.job_id
           JOIN artifact_generation g ON g.id = b.generation_id AND g.attempt_id = w.attempt_id
           ORDER BY w.job_id, b.name`,
    values: [jobs.map((j) => j.job_id), jobs.map((j) => j.attempt_id)],
  });
  const restored = await loadRestores(sql, jobs);
  const { rows: caches } = await sql.query<{ attempt_id: string; cache_key: string; sha256: string; entry_id: string }>(
    {
      name: "attest-load-caches",
      text: `SELECT attempt_id, cache_key, sha256, entry_id FROM cache_restore_grant
           WHERE attempt_id = ANY($1::uuid[]) ORDER BY attempt_id, granted_at`,
      values: [jobs.map((j) => j.attempt_id)],
    },
  );

  const out: LoadOutcome[] = refs.map(() => null);
  await eachLimited(jobs, 2, async (j) => {
    const mine = subjects.filter((s) => s.job_id === j.job_id);
    if (mine.length === 0) return;
    try {
      const digests = j.log_next_seq === null ? null : await logDigests(logs, j.attempt_id, j.log_next_seq);
      out[Number(j.ord) - 1] = records(j, instanceUri, mine, restored.get(j.job_id) ?? [], digests, caches);
    } catch (e) {
      out[Number(j.ord) - 1] = e instanceof Error ? e : new Error(String(e));
    }
  });
  return out;
}

function records(
  j: JobRow,
  instanceUri: string,
  subjects: { generation_id: string; name: string; sha256: string }[],
  restored: Restored[],
  logs: ProvenanceInput["logs"],
  caches: { attempt_id: string; cache_key: string; sha256: string; entry_id: string }[],
): ProvenanceRecords {
  const def = j.job_def;
  const input: ProvenanceInput = {
    instanceUri,
    org: { id: j.org_id, slug: j.org_slug },
    repo: { fullName: j.full_name, cloneUrl: j.clone_url },
    run: {
      id: j.run_id,
      ref: j.ref,
      commitSha: j.commit_sha,
      workflowPath: j.workflow_path,
      workflowSha256: j.workflow_hash,
      inputsSha256: createHash("sha256")
        .update(canonicalJson(j.inputs ?? {}))
        .digest("hex"),
      trustClass: j.trust_class,
    },
    job: {
      id: j.job_id,
      name: j.job_name,
      pool: j.pool,
      epoch: j.epoch,
      isolation: j.isolation === "microvm" ? "microvm" : "process",
      host: buildHost(j),
      image: def?.image ? { ref: def.image.ref, digest: def.image.digest ?? null } : null,
    },
    startedOn: j.started_at ?? j.claimed_at,
    finishedOn: j.finished_at,
    subjects: subjects.map((s) => ({ name: s.name, sha256: s.sha256 })),
    restored,
    caches: caches
      .filter((c) => c.attempt_id === j.attempt_id)
      .map((c) => ({ key: c.cache_key, sha256: c.sha256, entryId: c.entry_id })),
    logs,
  };
  return {
    input,
    orgId: j.org_id,
    runId: j.run_id,
    attemptId: j.attempt_id,
    subjects: subjects.map((s) => ({ generationId: s.generation_id, name: s.name, sha256: s.sha256 })),
  };
}

/**
 * A platform host's class is the one its operator declared for the pool (the minimum registration and
 * every claim enforce), lowered to what the host reported if that is less: the agent's report can
 * only ever weaken the builder id, never raise it. A pool without a row is read as microVM-only, as
 * placement reads it (ADR 0022).
 */
function buildHost(j: JobRow): BuildHost {
  if (j.self_hosted) return { kind: "self-hosted" };
  const declared = j.pool_min_isolation === "microvm" ? "microvm" : "process";
  return { kind: "platform", isolation: declared === "microvm" && j.isolation === "microvm" ? "microvm" : "process" };
}

/** The bindings the control plane resolved for each restore (grantDownload reads the same ones). */
async function loadRestores(sql: SqlPool, jobs: JobRow[]): Promise<Map<string, Restored[]>> {
  const wanted = jobs.flatMap((j) =>
    (j.job_def?.artifacts.restore ?? []).map((r) => ({ jobId: j.job_id, runId: j.run_id, ...r })),
  );
  const out = new Map<string, Restored[]>();
  if (wanted.length === 0) return out;
  const { rows } = await sql.query<{ ord: string; sha256: string; run_id: string; job_id: string; epoch: number }>({
    name: "attest-load-restores",
    text: `SELECT DISTINCT ON (w.ord) w.ord::text AS ord, g.sha256, g.run_id, g.job_id, g.epoch
           FROM unnest($1::uuid[], $2::text[], $3::text[]) WITH ORDINALITY AS w(run_id, name, from_job, ord)
           JOIN job_run p ON p.run_id = w.run_id AND p.name = w.from_job
           JOIN artifact_binding b ON b.job_id = p.id AND b.name = w.name
           JOIN artifact_generation g ON g.id = b.generation_id
           ORDER BY w.ord`,
    values: [wanted.map((w) => w.runId), wanted.map((w) => w.name), wanted.map((w) => w.fromJob)],
  });
  const byOrd = new Map(rows.map((r) => [Number(r.ord) - 1, r]));
  wanted.forEach((w, i) => {
    const g = byOrd.get(i);
    if (!g) return; // nothing bound under that name: the restore resolved nothing
    const list = out.get(w.jobId) ?? [];
    list.push({ name: w.name, fromJob: w.fromJob, sha256: g.sha256, runId: g.run_id, jobId: g.job_id, epoch: g.epoch });
    out.set(w.jobId, list);
  });
  return out;
}

/** SHA-256 of each stream as the control plane stored it (journal and archive), in one pass. */
async function logDigests(
  logs: { pool: SqlPool; archive: LogArchiveReader },
  attemptId: string,
  untilSeq: number,
): Promise<{ stdoutSha256: string; stderrSha256: string }> {
  const h = { stdout: createHash("sha256"), stderr: createHash("sha256") };
  for (let next = 0; next < untilSeq; ) {
    const chunks = await readLogChunks(logs.pool, logs.archive, attemptId, next, { untilSeq });
    const last = chunks[chunks.length - 1];
    if (!last) break;
    for (const c of chunks) h[c.stream].update(c.data);
    next = last.seq + 1;
  }
  return { stdoutSha256: h.stdout.digest("hex"), stderrSha256: h.stderr.digest("hex") };
}

async function eachLimited<T>(items: T[], n: number, fn: (x: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(n, items.length) }, async () => {
      while (next < items.length) await fn(items[next++] as T);
    }),
  );
}
