import { sqlPool, withTx, type Db, type SqlClient } from "@kiln/db";
import {
  bytesEqual,
  fromBase64Any,
  known,
  readProvenanceTrust,
  unavailable,
  type AttestationFacts,
  type Fact,
  type RunFacts,
  utf8,
} from "@kiln/domain";
import { attestationLeaf, verifyAttestationEnvelope } from "../attestation/index.ts";
import type { ResolvedArtifact } from "./resolve-artifact.ts";

// The facts a decision reads from the control plane's records, each in its own short read-only
// transaction with a statement_timeout: a query that takes longer (a locked table, an overloaded
// database, the log's storage unreachable) is an unavailable fact, never a hang, and decide()
// turns it into GATE.UNAVAILABLE (fail closed) or a recorded skip (fail open). Run in parallel.

export interface ArtifactFacts {
  run: Fact<RunFacts>;
  attestation: Fact<AttestationFacts | null>;
  quarantined: Fact<boolean>;
  previous: Fact<{ name: string; stays: { from: Date; until: Date | null }[] } | null>;
  /**
   * Member ids of who triggered the producing run and the runs it re-ran (separation of duties by
   * person, issue 28); null for one Kiln cannot name as a member.
   */
  changeAuthors: (string | null)[];
}

async function timed<T>(db: Db, name: string, timeoutMs: number, fn: (c: SqlClient) => Promise<T>): Promise<Fact<T>> {
  try {
    const value = await withTx(
      sqlPool(db),
      name,
      async (c) => {
        await c.query(`SET LOCAL statement_timeout = ${Math.max(1, Math.floor(timeoutMs))}`);
        return fn(c);
      },
      { retries: 0 },
    );
    return known(value);
  } catch (e) {
    const msg = e instanceof Error ? e.message : String(e);
    return unavailable(msg.slice(0, 200));
  }
}

async function runFacts(c: SqlClient, runId: string): Promise<RunFacts & { authors: (string | null)[] }> {
  // A retry or re-run is the same change: whoever triggered any run of the chain authored it (a
  // member cannot launder their own change by asking a colleague to press "re-run"). One statement
  // with the run, so the fact costs no extra round trip inside its timeout.
  const run = await c.query<{
    status: string;
    outcome: string | null;
    trust_class: string;
    ref: string | null;
    authors: (string | null)[];
  }>(
    `SELECT r.status, r.outcome, r.trust_class, r.ref,
       ARRAY(WITH RECURSIVE chain AS (
               SELECT w.parent_run_id, w.actor_user_id, 1 AS depth FROM workflow_run w WHERE w.id = r.id
               UNION ALL
               SELECT w.parent_run_id, w.actor_user_id, c.depth + 1 FROM workflow_run w JOIN chain c ON w.id = c.parent_run_id
               WHERE c.depth < 100)
             SELECT DISTINCT actor_user_id::text FROM chain) AS authors
     FROM workflow_run r WHERE r.id = $1::uuid`,
    [runId],
  );
  const r = run.rows[0];
  if (!r) throw new Error("the producing run is gone");
  const jobs = await c.query<{ name: string; status: string; outcome: string | null }>(
    "SELECT name, status, outcome FROM job_run WHERE run_id = $1::uuid ORDER BY job_index",
    [runId],
  );
  return {
    status: r.status,
    outcome: r.outcome,
    trustClass: r.trust_class,
    ref: r.ref,
    jobs: jobs.rows,
    authors: r.authors,
  };
}

async function attestationFacts(c: SqlClient, a: ResolvedArtifact): Promise<AttestationFacts | null> {
  if (!a.attestationId) return null;
  const rows = await c.query<{ envelope: string; state: string; salt: Buffer | null; leaf: Buffer | null }>(
    `SELECT t.envelope, t.state, t.tlog_salt AS salt, e.body AS leaf
     FROM attestation t LEFT JOIN tlog_entry e ON e.idx = t.tlog_index
     WHERE t.id = $1::uuid`,
    [a.attestationId],
  );
  const row = rows.rows[0];
  if (!row) return null;
  const keys = await c.query<{ key_id: string; spki_pem: string }>("SELECT key_id, spki_pem FROM attestation_key");
  const envelope: unknown = JSON.parse(row.envelope);
  const sig = verifyAttestationEnvelope(
    envelope,
    keys.rows.map((k) => ({ keyId: k.key_id, spkiPem: k.spki_pem })),
  );
  // The statement as signed (only trusted when the signature verifies).
  const st = sig.ok ? sig.value : decodeStatement(envelope);
  // Builder, trust class and ref read one way for every consumer (issue 28): a fork's statement written
  // before the distinct builder id still reads untrusted from its parameters.
  const trust = readProvenanceTrust(st as { predicate?: unknown } | null);
  return {
    signatureValid: sig.ok,
    signatureRule: sig.ok ? null : sig.rule,
    subjectDigests: (st?.subject ?? []).filter((s) => s.name === a.name).map((s) => s.digest.sha256 ?? ""),
    // The leaf is a salted commitment to the envelope (ADR 0026, issue 28); older entries carry it whole.
    inLog:
      row.leaf !== null &&
      bytesEqual(
        new Uint8Array(row.leaf),
        attestationLeaf(utf8(row.envelope), row.salt ? new Uint8Array(row.salt) : null),
      ),
    verifierState: row.state,
    builderId: trust.builderId,
    builderKind: trust.builder,
    trustClass: trust.trustClass,
    sourceRef: trust.ref,
  };
}

function decodeStatement(
  envelope: unknown,
): { subject: { name: string; digest: Record<string, string> }[]; predicate: unknown } | null {
  const payload = (envelope as { payload?: unknown } | null)?.payload;
  const bytes = typeof payload === "string" ? fromBase64Any(payload) : null;
  try {
    return bytes ? (JSON.parse(new TextDecoder().decode(bytes)) as never) : null;
  } catch {
    return null;
  }
}

async function previousStays(c: SqlClient, previousId: string, digest: string) {
  const name = await c.query<{ name: string }>("SELECT name FROM environment WHERE id = $1::uuid", [previousId]);
  const stays = await c.query<{ from: Date; until: Date | null }>(
    `SELECT m.at AS "from",
       (SELECT n.at FROM environment_pointer_move n WHERE n.environment_id = m.environment_id AND n.seq > m.seq
        ORDER BY n.seq LIMIT 1) AS until
     FROM environment_pointer_move m WHERE m.environment_id = $1::uuid AND m.to_digest = $2 ORDER BY m.seq`,
    [previousId, digest],
  );
  return { name: name.rows[0]?.name ?? "the previous environment", stays: stays.rows };
}

export async function gatherArtifactFacts(
  db: Db,
  timeoutMs: number,
  a: ResolvedArtifact,
  previousId: string | null,
): Promise<ArtifactFacts> {
  const [run, attestation, quarantined, previous] = await Promise.all([
    timed(db, "gate-run", timeoutMs, (c) => runFacts(c, a.runId)),
    timed(db, "gate-attestation", timeoutMs, (c) => attestationFacts(c, a)),
    timed(db, "gate-quarantine", timeoutMs, async (c) => {
      const q = await c.query("SELECT 1 FROM artifact_quarantine WHERE generation_id = $1::uuid", [a.generationId]);
      return (q.rowCount ?? 0) > 0;
    }),
    previousId
      ? timed(db, "gate-previous", timeoutMs, (c) => previousStays(c, previousId, a.digest))
      : Promise.resolve(known(null)),
  ]);
  // The producing run unreadable: its author is unknown, which counts against every approver.
  const changeAuthors = run.ok ? run.value.authors : [null];
  return { run: run.ok ? known(stripAuthors(run.value)) : run, attestation, quarantined, previous, changeAuthors };
}

function stripAuthors(r: RunFacts & { authors: (string | null)[] }): RunFacts {
  const { authors: _authors, ...rest } = r;
  return rest;
}
