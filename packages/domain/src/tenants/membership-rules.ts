import { DomainError } from "../shared/errors.ts";
import type { Role } from "./trust-class.ts";

// Membership changes (issue 19): the one rule the admin console, the CLI and the API share is that
// an org never loses its last admin, because nobody could then manage its repos, members or tokens
// without the server's shell. Pure: the caller loads the org's memberships (locked) and persists.

export interface MemberRow {
  userId: string;
  role: Role;
}

export type MembershipChange =
  | { kind: "add"; userId: string; role: Role }
  | { kind: "set_role"; userId: string; role: Role }
  | { kind: "remove"; userId: string };

export type MembershipDecision =
  | { kind: "added"; role: Role }
  | { kind: "role_changed"; from: Role; to: Role }
  | { kind: "removed"; role: Role }
  | { kind: "unchanged"; role: Role };

/**
 * What a change does to the org's memberships, or why it is refused. `add` of an existing member
 * changes its role (the CLI's `member add` has always been an upsert); `set_role` and `remove` need
 * an existing member (MEMBER.NOT_FOUND otherwise).
 */
export function decideMembershipChange(members: readonly MemberRow[], change: MembershipChange): MembershipDecision {
  const current = members.find((m) => m.userId === change.userId);
  if (!current) {
    if (change.kind === "add") return { kind: "added", role: change.role };
    throw new DomainError("MEMBER.NOT_FOUND", "no such member in this org");
  }
  const next = change.kind === "remove" ? null : change.role;
  if (next === current.role) return { kind: "unchanged", role: current.role };
  if (current.role === "admin") {
    const admins = members.filter((m) => m.role === "admin").length;
    if (admins <= 1)
      throw new DomainError(
        "MEMBER.LAST_ADMIN",
        next === null
          ? "this is the org's last admin: make another member an admin before removing them"
          : "this is the org's last admin: make another member an admin before changing their role",
      );
  }
  return next === null
    ? { kind: "removed", role: current.role }
    : { kind: "role_changed", from: current.role, to: next };
}
