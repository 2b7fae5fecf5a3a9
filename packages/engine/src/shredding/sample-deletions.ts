// The deletion sampler (issue 21, docs/adr/0037): takes objects whose data key was destroyed and
// tries every read path on each; any success is a leak, recorded in shred_sample and raised on the
// org home (listShredLeaks). A later round that finds the path unreadable again clears the alert.
// Idempotent per round: (round, object, path) is unique, so a retried round adds nothing.
import { withTx, type Db } from "@kiln/db";
import { isDomainError, type ShredKind, type ShredReadPath } from "@kiln/domain";
import { recordAuditEvent } from "../audit/index.ts";

export interface DeletedObject {
  objectKey: string;
  orgId: string;
  keyId: string;
  kind: ShredKind;
  subjectId: string;
}

export interface ShredProbe {
  path: ShredReadPath;
  kinds: readonly ShredKind[];
  /** Tries to read the object's plaintext; `readable` true means the deletion failed on this path. */
  probe(o: DeletedObject): Promise<{ readable: boolean; detail: string }>;
}

export interface SampleReport {
  objects: number;
  probes: number;
  leaks: number;
}

export async function sampleDeletions(
  deps: { db: Db; probes: readonly ShredProbe[] },
  opts: { roundId: string; now: Date; limit?: number },
): Promise<SampleReport> {
  // Random deleted objects, not the oldest: every object has a chance in every round.
  const objects = await deps.db.$queryRaw<
    { object_key: string; org_id: string; key_id: string; kind: ShredKind; subject_id: string }[]
  >`
    SELECT o.object_key, o.org_id::text, o.key_id::text, o.kind, o.subject_id::text FROM shred_object o
    WHERE o.due_at <= ${opts.now}
      AND EXISTS (SELECT 1 FROM shred_destruction d WHERE d.key_kind = 'data_key' AND d.key_id = o.key_id::text)
    ORDER BY random() LIMIT ${opts.limit ?? 20}`;
  const report: SampleReport = { objects: objects.length, probes: 0, leaks: 0 };
  for (const row of objects) {
    const o: DeletedObject = {
      objectKey: row.object_key,
      orgId: row.org_id,
      keyId: row.key_id,
      kind: row.kind,
      subjectId: row.subject_id,
    };
    for (const p of deps.probes) {
      if (!p.kinds.includes(o.kind)) continue;
      let r: { readable: boolean; detail: string };
      try {
        r = await p.probe(o);
      } catch (err) {
        // Refused (a SHRED/LOG/ARTIFACT domain error) or gone from the index: read nothing, the
        // outcome we want. Anything else is a broken probe, and a broken probe must not report
        // "unreadable": the round fails and pg-boss retries it.
        if (!refusal(err)) throw err;
        r = { readable: false, detail: `${err.name}: ${err.message}`.slice(0, 500) };
      }
      report.probes++;
      if (r.readable) report.leaks++;
      await withTx(deps.db, "shred-sample", async (tx) => {
        const n = await tx.$executeRaw`
          INSERT INTO shred_sample (round_id, org_id, object_key, path, outcome, detail)
          VALUES (${opts.roundId}::uuid, ${o.orgId}::uuid, ${o.objectKey}, ${p.path}, ${r.readable ? "leak" : "unreadable"}, ${r.detail})
          ON CONFLICT (round_id, object_key, path) DO NOTHING`;
        if (n === 1 && r.readable)
          await recordAuditEvent(tx, {
            orgId: o.orgId,
            kind: "shred.leak_detected",
            actor: "system:sample-deletions",
            subject: o.objectKey,
            data: { path: p.path, key_id: o.keyId, detail: r.detail },
          });
      });
    }
  }
  return report;
}

function refusal(err: unknown): err is Error {
  if (isDomainError(err)) return true;
  // The log reader's own refusals, plain errors: the segment rows were evicted (retention) so nothing
  // indexes the bytes, or the stored bytes are not what was archived (it serves nothing then).
  return err instanceof Error && /in neither the journal nor the archive|does not match its digest/.test(err.message);
}

export interface ShredLeak {
  object_key: string;
  kind: string;
  path: string;
  detail: string;
  detected_at: string;
}

/** The org's open leaks: (object, path) pairs whose latest sample read plaintext. */
export async function listShredLeaks(db: Db, orgId: string): Promise<ShredLeak[]> {
  const rows = await db.$queryRaw<{ object_key: string; kind: string; path: string; detail: string; at: Date }[]>`
    SELECT l.object_key, o.kind, l.path, l.detail, l.at FROM (
      SELECT DISTINCT ON (object_key, path) object_key, path, outcome, detail, at FROM shred_sample
      WHERE org_id = ${orgId}::uuid ORDER BY object_key, path, seq DESC) l
    JOIN shred_object o ON o.object_key = l.object_key AND o.org_id = ${orgId}::uuid
    WHERE l.outcome = 'leak' ORDER BY l.at DESC LIMIT 50`;
  return rows.map((r) => ({
    object_key: r.object_key,
    kind: r.kind,
    path: r.path,
    detail: r.detail,
    detected_at: r.at.toISOString(),
  }));
}
