// The destroyer (docs/adr/0037): at a due day's first millisecond, every data key row due then and
// the day's platform key file go, each with a deletion-evidence row (key id, due, destroyed at) in
// the append-only shred_destruction table and an audit event per org. Idempotent: rows already
// gone are not found again, evidence is keyed by key id, and a missing file is a no-op.
import { withTx, type Db } from "@kiln/db";
import { shredDay, shredDueAt } from "@kiln/domain";
import { recordAuditEvent } from "../audit/index.ts";
import type { PlatformKeyStore } from "./platform-keys.ts";

export interface DestroyReport {
  dataKeys: number;
  platformKeys: number;
}

interface DueRow {
  id: string;
  org_id: string;
  day: Date;
  kind: string;
  class: string;
  due_day: Date;
}

const BATCH = 200;
const dateText = (d: Date) => d.toISOString().slice(0, 10);

export async function destroyDueKeys(
  deps: { db: Db; platformKeys: PlatformKeyStore },
  now: Date,
  actor = "system:destroy-shred-keys",
): Promise<DestroyReport> {
  const report: DestroyReport = { dataKeys: 0, platformKeys: 0 };
  const today = shredDay(now);
  for (;;) {
    // A due day is due from its first millisecond: due_day <= today covers exactly those.
    const n = await withTx(deps.db, "shred-destroy-data-keys", async (tx) => {
      const rows = await tx.$queryRaw<DueRow[]>`
        DELETE FROM shred_data_key WHERE id IN (
          SELECT id FROM shred_data_key WHERE due_day <= ${today}::date ORDER BY due_day, id LIMIT ${BATCH}
          FOR UPDATE SKIP LOCKED)
        RETURNING id::text, org_id::text, day, kind, class, due_day`;
      for (const r of rows) {
        const dueAt = shredDueAt(dateText(r.due_day));
        await tx.$executeRaw`
          INSERT INTO shred_destruction (key_kind, key_id, org_id, day, kind, class, due_at, destroyed_at)
          VALUES ('data_key', ${r.id}, ${r.org_id}::uuid, ${r.day}, ${r.kind}, ${r.class}, ${dueAt}, ${now})
          ON CONFLICT (key_kind, key_id) DO NOTHING`;
        await recordAuditEvent(tx, {
          orgId: r.org_id,
          kind: "shred.data_key_destroyed",
          actor,
          subject: r.id,
          data: {
            day: dateText(r.day),
            kind: r.kind,
            class: r.class,
            due_at: dueAt.toISOString(),
            destroyed_at: now.toISOString(),
          },
        });
      }
      return rows.length;
    });
    report.dataKeys += n;
    if (n < BATCH) break;
  }
  for (const dueDay of await deps.platformKeys.list()) {
    const dueAt = shredDueAt(dueDay);
    if (dueAt.getTime() > now.getTime()) continue;
    // Evidence first, then the file: a crash in between leaves a file the next run still removes,
    // never a removed file without its record.
    await withTx(deps.db, "shred-destroy-platform-key", async (tx) => {
      const n = await tx.$executeRaw`
        INSERT INTO shred_destruction (key_kind, key_id, due_at, destroyed_at)
        VALUES ('platform_key', ${dueDay}, ${dueAt}, ${now}) ON CONFLICT (key_kind, key_id) DO NOTHING`;
      if (n === 1)
        await recordAuditEvent(tx, {
          orgId: null,
          kind: "shred.platform_key_destroyed",
          actor,
          subject: dueDay,
          data: { due_at: dueAt.toISOString(), destroyed_at: now.toISOString() },
        });
    });
    if (await deps.platformKeys.destroy(dueDay)) report.platformKeys++;
  }
  return report;
}
