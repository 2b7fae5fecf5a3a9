import type { Db } from "@kiln/db";
import { DomainError } from "@kiln/domain";

// Platform operators: users flagged platform_admin set entitlements in shared pools from the
// dashboard (docs/scheduling.md). The flag is granted only on the server (`kiln platform-admin
// add <login>`), which is the operator's own path; no web procedure can grant it.

export async function setPlatformAdmin(
  db: Db,
  input: { login: string; admin: boolean },
): Promise<{ login: string; platformAdmin: boolean }> {
  const rows = await db.$queryRaw<{ login: string; platform_admin: boolean }[]>`
    UPDATE app_user SET platform_admin = ${input.admin} WHERE login = ${input.login} RETURNING login, platform_admin`;
  const row = rows[0];
  if (!row) throw new DomainError("REQUEST.INVALID", `no user named ${input.login}; add them as a member first`);
  return { login: row.login, platformAdmin: row.platform_admin };
}

export async function listPlatformAdmins(db: Db): Promise<{ login: string; forgeId: string | null }[]> {
  const rows = await db.$queryRaw<{ login: string; forge_id: bigint | null }[]>`
    SELECT login, forge_id FROM app_user WHERE platform_admin ORDER BY login`;
  return rows.map((r) => ({ login: r.login, forgeId: r.forge_id === null ? null : String(r.forge_id) }));
}

/** Whether the signed-in user may edit entitlements (the dashboard shows the edit control). */
export async function isPlatformAdmin(db: Db, userId: string): Promise<boolean> {
  const rows = await db.$queryRaw<{ platform_admin: boolean }[]>`
    SELECT platform_admin FROM app_user WHERE id = ${userId}::uuid`;
  return rows[0]?.platform_admin === true;
}
