// `kiln secrets rotate-kek --new-kek-file F` (ADR 0025): every org's DEK rewrapped under the new
// KEK in one transaction, the old KEK disabled in the same commit. Secret ciphertexts do not change
// (they are under the DEKs). Afterwards nothing is wrapped under the old KEK and no process accepts it.
import { withTx, type Db } from "@kiln/db";
import { DomainError } from "@kiln/domain";
import { recordAuditEvent } from "../audit/index.ts";
import { unwrapDek, wrapDek } from "./envelope.ts";
import { type Kek, kekNamed, kekNames } from "./kek.ts";

export interface RotateKekResult {
  old_kek_id: string | null;
  new_kek_id: string;
  rewrapped: number;
}

export async function rotateKek(db: Db, input: { oldKek: Kek; newKek: Kek; actor: string }): Promise<RotateKekResult> {
  const { newKek } = input;
  let oldKek = input.oldKek;
  if (kekNames(oldKek).some((n) => kekNames(newKek).includes(n)) || oldKek.key.equals(newKek.key))
    throw new DomainError("REQUEST.INVALID", "the new KEK is the current one");
  return withTx(
    db,
    "rotate-kek",
    async (tx) => {
      // Locks out new DEKs under the old KEK (creators hold it FOR SHARE) until this commits.
      const names = [...kekNames(oldKek), ...kekNames(newKek)];
      const keks = await tx.$queryRaw<{ id: string; state: string }[]>`
        SELECT id, state FROM secret_kek WHERE id = ANY(${names}::text[]) FOR UPDATE`;
      const newNames = kekNames(newKek);
      if (keks.some((k) => newNames.includes(k.id)))
        throw new DomainError("REQUEST.INVALID", `KEK ${newKek.id} was used before; a rotation needs a fresh key`);
      const active = await tx.$queryRaw<{ id: string }[]>`SELECT id FROM secret_kek WHERE state = 'active'`;
      const activeId = active[0]?.id ?? null;
      // The current KEK under whichever of its names the database registered (kekNames).
      const registered = activeId === null ? oldKek : kekNamed(oldKek, activeId);
      if (!registered)
        throw new DomainError("SECRET.KEK_MISMATCH", `the active KEK is ${activeId}, this process holds ${oldKek.id}`);
      oldKek = registered;
      const rows = await tx.$queryRaw<{ org_id: string; kek_id: string; wrapped_dek: Uint8Array }[]>`
        SELECT org_id, kek_id, wrapped_dek FROM org_secret_key ORDER BY org_id FOR UPDATE`;
      for (const r of rows) {
        if (r.kek_id !== oldKek.id)
          throw new DomainError(
            "SECRET.KEK_MISMATCH",
            `org ${r.org_id}'s data key is under ${r.kek_id}, not ${oldKek.id}`,
          );
        const dek = unwrapDek(oldKek, r.org_id, Buffer.from(r.wrapped_dek));
        const rewrapped = wrapDek(newKek, r.org_id, dek);
        dek.fill(0);
        r.wrapped_dek = rewrapped;
      }
      if (activeId !== null)
        await tx.$executeRaw`UPDATE secret_kek SET state = 'disabled', disabled_at = now() WHERE id = ${oldKek.id}`;
      await tx.$executeRaw`INSERT INTO secret_kek (id, state) VALUES (${newKek.id}, 'active')`;
      for (const r of rows) {
        await tx.$executeRaw`
          UPDATE org_secret_key SET kek_id = ${newKek.id}, wrapped_dek = ${Buffer.from(r.wrapped_dek)}, rewrapped_at = now()
          WHERE org_id = ${r.org_id}::uuid`;
      }
      await recordAuditEvent(tx, {
        orgId: null,
        kind: "secrets.kek_rotated",
        actor: input.actor,
        subject: newKek.id,
        data: { old_kek_id: activeId, new_kek_id: newKek.id, rewrapped: rows.length },
      });
      return { old_kek_id: activeId, new_kek_id: newKek.id, rewrapped: rows.length };
    },
    { timeoutMs: 120_000 },
  );
}
