import { withTx, type Db, type Tx } from "@kiln/db";
import { decideMembershipChange, DomainError, type MembershipChange, type MemberRow, type Role } from "@kiln/domain";
import { recordAuditEvent } from "../audit/index.ts";
import { assertRole, orgIdOf, UNNAMED_ACTOR } from "./admin.ts";

// Members of an org (issue 19): the CLI's `member add|list|role|remove` and the dashboard's members
// page go through these. Every change locks the org's memberships first, so two admins demoting each
// other at once cannot leave the org without one (the second sees the first's change and is refused).

export interface MemberView {
  userId: string;
  login: string;
  forgeId: number | null;
  role: Role;
  createdAt: string;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Admins first, then by login; scoped by the org's slug in the query. */
export async function listMembers(db: Db, input: { orgSlug: string }): Promise<MemberView[]> {
  const rows = await db.$queryRaw<
    { user_id: string; login: string; forge_id: bigint | null; role: Role; created_at: Date }[]
  >`
    SELECT m.user_id, u.login, u.forge_id, m.role, m.created_at
    FROM membership m JOIN org o ON o.id = m.org_id JOIN app_user u ON u.id = m.user_id
    WHERE o.slug = ${input.orgSlug}
    ORDER BY (m.role = 'admin') DESC, u.login LIMIT 1000`;
  return rows.map((r) => ({
    userId: r.user_id,
    login: r.login,
    forgeId: r.forge_id === null ? null : Number(r.forge_id),
    role: r.role,
    createdAt: r.created_at.toISOString(),
  }));
}

/** The org's memberships, locked for the rest of the transaction (the last-admin rule reads them all). */
async function lockMembers(tx: Tx, orgId: string): Promise<MemberRow[]> {
  const rows = await tx.$queryRaw<{ user_id: string; role: Role }[]>`
    SELECT user_id, role FROM membership WHERE org_id = ${orgId}::uuid ORDER BY user_id FOR UPDATE`;
  return rows.map((r) => ({ userId: r.user_id, role: r.role }));
}

/** Decide, persist and audit one change inside `tx`; answers the member's role afterwards (null: removed). */
async function applyChange(
  tx: Tx,
  orgId: string,
  change: MembershipChange,
  audit: { actor: string; login: string },
): Promise<Role | null> {
  const d = decideMembershipChange(await lockMembers(tx, orgId), change);
  if (d.kind === "unchanged") return d.role;
  if (d.kind === "removed") {
    await tx.$executeRaw`DELETE FROM membership WHERE org_id = ${orgId}::uuid AND user_id = ${change.userId}::uuid`;
  } else {
    await tx.$executeRaw`
      INSERT INTO membership (org_id, user_id, role) VALUES (${orgId}::uuid, ${change.userId}::uuid, ${d.kind === "added" ? d.role : d.to})
      ON CONFLICT (org_id, user_id) DO UPDATE SET role = EXCLUDED.role`;
  }
  const kind = d.kind === "added" ? "member.added" : d.kind === "removed" ? "member.removed" : "member.role_changed";
  const data = d.kind === "role_changed" ? { from: d.from, to: d.to } : { role: d.role };
  await recordAuditEvent(tx, {
    orgId,
    kind,
    actor: audit.actor,
    subject: audit.login,
    data: { user_id: change.userId, ...data },
  });
  return d.kind === "removed" ? null : d.kind === "added" ? d.role : d.to;
}

/**
 * Adds (or re-roles) a member. `forgeId` is the forge's numeric user id (GitHub `user.id`), which is
 * what webhook senders and GitHub sign-ins are matched by: a login can be renamed and then taken by
 * another account. With an id, the user is found by it (a rename updates the stored login); a user
 * without one is never matched for trust. A login already recorded for another id is refused.
 */
export async function addMember(
  db: Db,
  input: { orgSlug: string; login: string; role: string; forgeId?: number | null; actor?: string },
): Promise<{ userId: string; role: Role }> {
  assertRole(input.role);
  const role = input.role;
  const forgeId = input.forgeId ?? null;
  if (forgeId !== null && (!Number.isSafeInteger(forgeId) || forgeId < 1))
    throw new DomainError("REQUEST.INVALID", "forge id must be a positive integer (GitHub's user id)");
  if (!/^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$/.test(input.login))
    throw new DomainError("REQUEST.INVALID", "login must be letters, digits, dashes, dots or underscores");
  const orgId = await orgIdOf(db, input.orgSlug);
  return withTx(db, "add-member", async (tx) => {
    const userId = await upsertUser(tx, input.login, forgeId);
    await applyChange(
      tx,
      orgId,
      { kind: "add", userId, role },
      { actor: input.actor ?? UNNAMED_ACTOR, login: input.login },
    );
    return { userId, role };
  });
}

async function upsertUser(tx: Tx, login: string, forgeId: number | null): Promise<string> {
  const holders = await tx.$queryRaw<{ id: string; forge_id: bigint | null; login: string }[]>`
    SELECT id, forge_id, login FROM app_user WHERE login = ${login} OR (${forgeId}::bigint IS NOT NULL AND forge_id = ${forgeId}::bigint)
    FOR UPDATE`;
  const byId = forgeId === null ? undefined : holders.find((u) => u.forge_id === BigInt(forgeId));
  const byLogin = holders.find((u) => u.login === login);
  if (byLogin && byLogin !== byId && byLogin.forge_id !== null && forgeId !== null)
    throw new DomainError(
      "REQUEST.INVALID",
      `login ${login} is recorded for forge id ${byLogin.forge_id}; if that account was renamed, add it under its new login first`,
    );
  if (byId) {
    // The same account under a new login: keep its memberships, follow the rename.
    if (byLogin && byLogin !== byId)
      throw new DomainError("REQUEST.INVALID", `login ${login} belongs to another user without a forge id`);
    await tx.$executeRaw`UPDATE app_user SET login = ${login} WHERE id = ${byId.id}::uuid`;
    return byId.id;
  }
  if (byLogin) {
    if (forgeId !== null)
      await tx.$executeRaw`UPDATE app_user SET forge_id = ${forgeId}::bigint WHERE id = ${byLogin.id}::uuid`;
    return byLogin.id;
  }
  const rows = await tx.$queryRaw<{ id: string }[]>`
    INSERT INTO app_user (login, forge_id) VALUES (${login}, ${forgeId}::bigint) RETURNING id`;
  const id = rows[0]?.id;
  if (!id) throw new Error("user insert returned nothing");
  return id;
}

/** The member's user id and login in this org, by id or by login; MEMBER.NOT_FOUND otherwise. */
async function findMember(tx: Tx, orgId: string, who: { userId: string } | { login: string }) {
  if ("userId" in who && !UUID.test(who.userId))
    throw new DomainError("MEMBER.NOT_FOUND", "no such member in this org");
  const byId = "userId" in who ? who.userId : null;
  const byLogin = "login" in who ? who.login : null;
  const rows = await tx.$queryRaw<{ user_id: string; login: string }[]>`
    SELECT m.user_id, u.login FROM membership m JOIN app_user u ON u.id = m.user_id
    WHERE m.org_id = ${orgId}::uuid AND (u.id = ${byId}::uuid OR u.login = ${byLogin})`;
  const m = rows[0];
  if (!m) throw new DomainError("MEMBER.NOT_FOUND", "no such member in this org");
  return m;
}

/** Changes a member's role; refused (MEMBER.LAST_ADMIN) when it would leave the org without an admin. */
export async function changeMemberRole(
  db: Db,
  input: { orgSlug: string; member: { userId: string } | { login: string }; role: string; actor: string },
): Promise<MemberView> {
  assertRole(input.role);
  const role = input.role;
  const orgId = await orgIdOf(db, input.orgSlug);
  const userId = await withTx(db, "change-member-role", async (tx) => {
    const m = await findMember(tx, orgId, input.member);
    await applyChange(tx, orgId, { kind: "set_role", userId: m.user_id, role }, { actor: input.actor, login: m.login });
    return m.user_id;
  });
  const view = (await listMembers(db, { orgSlug: input.orgSlug })).find((m) => m.userId === userId);
  if (!view) throw new DomainError("MEMBER.NOT_FOUND", "no such member in this org");
  return view;
}

/**
 * Removes a member (never the last admin). Their session's next request is refused: every procedure
 * reads membership in its tenant query. Runs they triggered and the audit trail keep their login.
 */
export async function removeMember(
  db: Db,
  input: { orgSlug: string; member: { userId: string } | { login: string }; actor: string },
): Promise<{ userId: string; login: string }> {
  const orgId = await orgIdOf(db, input.orgSlug);
  return withTx(db, "remove-member", async (tx) => {
    const m = await findMember(tx, orgId, input.member);
    await applyChange(tx, orgId, { kind: "remove", userId: m.user_id }, { actor: input.actor, login: m.login });
    return { userId: m.user_id, login: m.login };
  });
}
