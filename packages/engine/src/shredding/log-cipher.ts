// Archived log segments under crypto-shredding (docs/adr/0037): the archiver seals each gzip
// segment under its org's data key for (today, log, the run's class) and records the object; the
// readers (raw log, SSE replay, attestation) open it. Both halves run in the control plane: logs
// already pass through it, unlike artifact bytes (those the host agent seals).
import type { Db } from "@kiln/db";
import {
  classify,
  DomainError,
  type ShredKind,
  parseShredHeader,
  platformRetentionWindows,
  windowDays,
  type RetentionWindows,
} from "@kiln/domain";
import type { SqlPool } from "../shared/sql-pool.ts";
import { openBuffer, sealBuffer } from "@kiln/chunk-cipher";
import { dataKeyForRead, dataKeyForWrite, type ShredKeyDeps } from "./data-keys.ts";

export interface SegmentSealer {
  seal(o: { orgId: string; runId: string }, body: Buffer): Promise<{ body: Buffer; keyId: string; dueAt: Date }>;
  /** Records a stored sealed object (idempotent), for the sampler to probe after its key is gone. */
  record(
    pool: SqlPool,
    o: { objectKey: string; orgId: string; keyId: string; attemptId: string; dueAt: Date },
  ): Promise<void>;
}

export interface SegmentOpener {
  /** The plaintext and the instant it stops being readable. */
  open(orgId: string, body: Uint8Array): Promise<{ plain: Buffer; dueAt: Date }>;
}

interface RunScope {
  orgId: string;
  cls: ReturnType<typeof classify>;
  windowDays: number;
}

/**
 * The run's retention class (from its trigger, ref and the repo's release patterns, issue 21) and
 * the window for `kind` after the org's shortenings (org_retention_window, never longer).
 */
export async function runShredScope(
  db: Db,
  runId: string,
  kind: ShredKind,
  windows: RetentionWindows,
): Promise<RunScope> {
  const rows = await db.$queryRaw<
    { org_id: string; trigger: string; ref: string | null; default_branch: string; release_patterns: string[] }[]
  >`
    SELECT r.org_id::text, r.trigger, r.ref, p.default_branch, p.release_patterns
    FROM workflow_run r JOIN repo p ON p.id = r.repo_id WHERE r.id = ${runId}::uuid`;
  const r = rows[0];
  if (!r) throw new DomainError("RUN.NOT_FOUND", `run ${runId} not found`);
  const cls = classify({
    trigger: r.trigger,
    ref: r.ref,
    defaultBranch: r.default_branch,
    releasePatterns: r.release_patterns,
  });
  const o = await db.$queryRaw<{ days: number }[]>`
    SELECT days FROM org_retention_window WHERE org_id = ${r.org_id}::uuid AND kind = ${kind} AND class = ${cls}`;
  const overrides = o[0] ? { [kind]: { [cls]: o[0].days } } : null;
  return { orgId: r.org_id, cls, windowDays: windowDays(kind, cls, windows, overrides) };
}

export class ShredLogCipher implements SegmentSealer, SegmentOpener {
  constructor(
    private readonly deps: ShredKeyDeps,
    private readonly windows: RetentionWindows = platformRetentionWindows(null),
    private readonly clock: () => Date = () => new Date(),
  ) {}

  async seal(o: { orgId: string; runId: string }, body: Buffer): Promise<{ body: Buffer; keyId: string; dueAt: Date }> {
    const scope = await runShredScope(this.deps.db, o.runId, "log", this.windows);
    if (scope.orgId !== o.orgId) throw new Error(`run ${o.runId} is not org ${o.orgId}'s`);
    const key = await dataKeyForWrite(this.deps, {
      orgId: o.orgId,
      kind: "log",
      cls: scope.cls,
      windowDays: scope.windowDays,
      at: this.clock(),
    });
    try {
      return { body: sealBuffer(key, body), keyId: key.id, dueAt: key.dueAt };
    } finally {
      key.key.fill(0);
    }
  }

  async record(
    pool: SqlPool,
    o: { objectKey: string; orgId: string; keyId: string; attemptId: string; dueAt: Date },
  ): Promise<void> {
    await pool.query(
      `INSERT INTO shred_object (object_key, org_id, key_id, kind, subject_id, due_at)
       VALUES ($1, $2::uuid, $3::uuid, 'log', $4::uuid, $5) ON CONFLICT (object_key) DO NOTHING`,
      [o.objectKey, o.orgId, o.keyId, o.attemptId, o.dueAt],
    );
  }

  async open(orgId: string, body: Uint8Array): Promise<{ plain: Buffer; dueAt: Date }> {
    const { keyId } = parseShredHeader(body);
    const key = await dataKeyForRead(this.deps, orgId, keyId, this.clock());
    try {
      return { plain: openBuffer(key, body), dueAt: key.dueAt };
    } finally {
      key.key.fill(0);
    }
  }
}
