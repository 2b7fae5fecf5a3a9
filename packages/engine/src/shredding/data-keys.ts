// Data keys per org, UTC day, data kind and retention class (docs/adr/0037). Made in the control
// plane on first use of the day; the row holds the key double-wrapped:
//   wrapped = AES-GCM(platform key of due day, AES-GCM(org DEK, data key, inner AAD), outer AAD)
// The org DEK is the secrets envelope's (ADR 0025: under the KEK file); the platform key is a file
// in KILN_SHRED_KEY_DIR. Opening needs the row, the KEK file and the day file together.
import { randomBytes } from "node:crypto";
import { withTx, type Db, type Tx } from "@kiln/db";
import { DomainError, isDomainError, shredDay, shredDueAt, shredDueDay, type ShredKind } from "@kiln/domain";
import { gcmOpen, gcmSeal, orgDataKey, type KekSource } from "../secrets/index.ts";
import type { DataKey } from "@kiln/chunk-cipher";
import type { PlatformKeyStore } from "./platform-keys.ts";

export interface ShredKeyDeps {
  db: Db;
  keks: KekSource;
  platformKeys: PlatformKeyStore;
}

export interface WriteKey extends DataKey {
  dueAt: Date;
}

function innerAad(orgId: string, keyId: string, day: string, kind: string, cls: string): string {
  return `kiln-shred-dk:v1:${orgId}:${keyId}:${day}:${kind}:${cls}`;
}

function outerAad(dueDay: string, keyId: string): string {
  return `kiln-shred-day:v1:${dueDay}:${keyId}`;
}

const dateText = (d: Date) => d.toISOString().slice(0, 10);

interface KeyRow {
  id: string;
  org_id: string;
  day: Date;
  kind: string;
  class: string;
  due_day: Date;
  wrapped: Uint8Array;
}

/** The data key to seal new data of this org, kind and class with at `at`; made on first use of the day. */
export async function dataKeyForWrite(
  deps: ShredKeyDeps,
  s: { orgId: string; kind: ShredKind; cls: string; windowDays: number; at: Date },
): Promise<WriteKey> {
  const day = shredDay(s.at);
  const dueDay = shredDueDay(day, s.windowDays);
  // Made outside the transaction: a file is not rolled back, and an unused day key is harmless.
  const platform = await deps.platformKeys.getOrCreate(dueDay);
  return withTx(deps.db, "shred-data-key-for-write", async (tx) => {
    const existing = await loadByScope(tx, s.orgId, day, s.kind, s.cls);
    if (existing) return unwrapRow(tx, deps, existing, s.at);
    const id = crypto.randomUUID();
    const key = randomBytes(32);
    const orgDek = await orgDataKey(tx, deps.keks, s.orgId, { create: true });
    try {
      const inner = gcmSeal(orgDek, key, innerAad(s.orgId, id, day, s.kind, s.cls));
      const wrapped = gcmSeal(platform, inner, outerAad(dueDay, id));
      const n = await tx.$executeRaw`
        INSERT INTO shred_data_key (id, org_id, day, kind, class, due_day, window_days, wrapped)
        VALUES (${id}::uuid, ${s.orgId}::uuid, ${day}::date, ${s.kind}, ${s.cls}, ${dueDay}::date, ${s.windowDays}, ${wrapped})
        ON CONFLICT (org_id, day, kind, class) DO NOTHING`;
      if (n === 1) return { id, key, dueAt: shredDueAt(dueDay) };
    } finally {
      orgDek.fill(0);
    }
    key.fill(0);
    // Another writer made the day's key first: use theirs (one key per scope, always).
    const winner = await loadByScope(tx, s.orgId, day, s.kind, s.cls);
    if (!winner) throw new Error(`shred data key for ${s.orgId} ${day} vanished during creation`);
    return unwrapRow(tx, deps, winner, s.at);
  });
}

/**
 * The data key `keyId` of org `orgId`, to open what it sealed. The org is part of the query: a key
 * id from another org's object is simply not found. Refused from its due instant on, even before
 * the destroyer has run, so "gone at D + window" holds to the millisecond.
 */
export async function dataKeyForRead(deps: ShredKeyDeps, orgId: string, keyId: string, now: Date): Promise<WriteKey> {
  return withTx(deps.db, "shred-data-key-for-read", async (tx) => {
    const rows = await tx.$queryRaw<KeyRow[]>`
      SELECT id::text, org_id::text, day, kind, class, due_day, wrapped FROM shred_data_key
      WHERE id = ${keyId}::uuid AND org_id = ${orgId}::uuid`;
    const row = rows[0];
    if (!row)
      throw new DomainError("SHRED.KEY_DESTROYED", `data key ${keyId} does not exist (destroyed or never this org's)`);
    return unwrapRow(tx, deps, row, now);
  });
}

/**
 * For the deletion sampler only: opens key `keyId` from whatever the database and the key dir hold,
 * ignoring the due instant (a row restored from a backup next to a restored day key is exactly the
 * leak the clock check would hide). Null when the material is gone or does not open.
 */
export async function keyMaterialStillOpens(deps: ShredKeyDeps, keyId: string): Promise<DataKey | null> {
  return withTx(deps.db, "shred-key-material-probe", async (tx) => {
    const rows = await tx.$queryRaw<KeyRow[]>`
      SELECT id::text, org_id::text, day, kind, class, due_day, wrapped FROM shred_data_key WHERE id = ${keyId}::uuid`;
    const row = rows[0];
    if (!row) return null;
    try {
      return await unwrapRow(tx, deps, row, new Date(0));
    } catch (e) {
      if (isDomainError(e) && e.code.startsWith("SHRED.")) return null;
      throw e;
    }
  });
}

async function loadByScope(tx: Tx, orgId: string, day: string, kind: string, cls: string): Promise<KeyRow | null> {
  const rows = await tx.$queryRaw<KeyRow[]>`
    SELECT id::text, org_id::text, day, kind, class, due_day, wrapped FROM shred_data_key
    WHERE org_id = ${orgId}::uuid AND day = ${day}::date AND kind = ${kind} AND class = ${cls}`;
  return rows[0] ?? null;
}

async function unwrapRow(tx: Tx, deps: ShredKeyDeps, row: KeyRow, now: Date): Promise<WriteKey> {
  const dueDay = dateText(row.due_day);
  if (shredDueAt(dueDay).getTime() <= now.getTime())
    throw new DomainError("SHRED.KEY_DESTROYED", `data key ${row.id} was due for destruction at ${dueDay}T00:00:00Z`);
  const platform = await deps.platformKeys.get(dueDay);
  if (!platform) throw new DomainError("SHRED.KEY_DESTROYED", `platform key ${dueDay} of data key ${row.id} is gone`);
  const inner = gcmOpen(platform, Buffer.from(row.wrapped), outerAad(dueDay, row.id));
  if (!inner)
    throw new DomainError("SHRED.DECRYPT_FAILED", `data key ${row.id} does not open under platform key ${dueDay}`);
  const orgDek = await orgDataKey(tx, deps.keks, row.org_id, { create: false });
  try {
    const key = gcmOpen(orgDek, inner, innerAad(row.org_id, row.id, dateText(row.day), row.kind, row.class));
    if (!key || key.length !== 32)
      throw new DomainError("SHRED.DECRYPT_FAILED", `data key ${row.id} does not open under org ${row.org_id}'s key`);
    return { id: row.id, key, dueAt: shredDueAt(dueDay) };
  } finally {
    orgDek.fill(0);
  }
}
