import type { DbOrTx } from "@kiln/db";
import type { Role } from "@kiln/domain";

export interface MembershipView {
  slug: string;
  role: Role;
}

/** The orgs a user can switch between, for the org switcher. */
export async function listMemberships(db: DbOrTx, input: { userId: string }): Promise<MembershipView[]> {
  return db.$queryRaw<MembershipView[]>`
    SELECT o.slug, m.role FROM membership m JOIN org o ON o.id = m.org_id
    WHERE m.user_id = ${input.userId}::uuid
    ORDER BY o.slug`;
}
