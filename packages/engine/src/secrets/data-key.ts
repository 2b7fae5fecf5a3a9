// The org's data key: created on the org's first secret, opened for every read and write. The KEK
// row check keeps at most one KEK in use: a process holding another key (a stale file after a
// rotation, a misconfigured host) cannot wrap a new org's DEK under it.
import type { Tx } from "@kiln/db";
import { DomainError } from "@kiln/domain";
import { newDek, unwrapDek, wrapDek } from "./envelope.ts";
import { type Kek, type KekSource, kekNames } from "./kek.ts";

/**
 * Registers `kek` as the active KEK on first use (under its preferred name) and returns it under
 * the name the database knows it by (kekNames); refuses a KEK that is not (or no longer) active.
 */
async function assertActiveKek(tx: Tx, kek: Kek): Promise<Kek> {
  const names = kekNames(kek);
  // ON CONFLICT without a target also absorbs the one-active index: another active KEK means ours is foreign.
  await tx.$executeRaw`
    INSERT INTO secret_kek (id, state) SELECT ${kek.id}, 'active'
    WHERE NOT EXISTS (SELECT 1 FROM secret_kek WHERE id = ANY(${names}::text[])) ON CONFLICT DO NOTHING`;
  // FOR SHARE: a rotation (which locks the row FOR UPDATE) waits for this transaction's new DEK and rewraps it too.
  const rows = await tx.$queryRaw<{ id: string; state: string }[]>`
    SELECT id, state FROM secret_kek WHERE id = ANY(${names}::text[]) ORDER BY id FOR SHARE`;
  const active = rows.find((r) => r.state === "active");
  if (active) return { id: active.id, key: kek.key };
  throw new DomainError(
    "SECRET.KEK_MISMATCH",
    rows.length > 0
      ? `KEK ${kek.id} was disabled by a rotation; install the new KEK file`
      : `KEK ${kek.id} is not this database's active KEK`,
  );
}

/** The org's DEK in clear (caller zeroes it when done); created under the active KEK if absent. */
export async function orgDataKey(tx: Tx, keks: KekSource, orgId: string, opts: { create: boolean }): Promise<Buffer> {
  const existing = await loadWrapped(tx, orgId);
  if (existing) return openWrapped(keks, orgId, existing);
  if (!opts.create) throw new DomainError("SECRET.NOT_FOUND", "this org has no secrets");
  const kek = await assertActiveKek(tx, keks.current());
  const dek = newDek();
  // Two first writes for one org race here: the loser's DEK is discarded and it uses the winner's.
  const ins = await tx.$executeRaw`
    INSERT INTO org_secret_key (org_id, kek_id, wrapped_dek) VALUES (${orgId}::uuid, ${kek.id}, ${wrapDek(kek, orgId, dek)})
    ON CONFLICT (org_id) DO NOTHING`;
  if (ins === 1) return dek;
  dek.fill(0);
  const winner = await loadWrapped(tx, orgId);
  if (!winner) throw new Error(`org ${orgId}: data key vanished during creation`);
  return openWrapped(keks, orgId, winner);
}

interface WrappedRow {
  kek_id: string;
  wrapped_dek: Uint8Array;
  kek_state: string;
}

async function loadWrapped(tx: Tx, orgId: string): Promise<WrappedRow | null> {
  const rows = await tx.$queryRaw<WrappedRow[]>`
    SELECT k.kek_id, k.wrapped_dek, e.state AS kek_state
    FROM org_secret_key k JOIN secret_kek e ON e.id = k.kek_id WHERE k.org_id = ${orgId}::uuid`;
  return rows[0] ?? null;
}

function openWrapped(keks: KekSource, orgId: string, row: WrappedRow): Buffer {
  // A rotation rewraps every DEK before it disables the old KEK, so this means a broken rotation.
  if (row.kek_state !== "active")
    throw new DomainError(
      "SECRET.KEK_MISMATCH",
      `org ${orgId}'s data key is wrapped only under disabled KEK ${row.kek_id}`,
    );
  return unwrapDek(keks.forId(row.kek_id), orgId, Buffer.from(row.wrapped_dek));
}
