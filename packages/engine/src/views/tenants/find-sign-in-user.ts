import type { DbOrTx } from "@kiln/db";

export interface SignInUser {
  id: string;
  login: string;
}

/**
 * The Kiln user a sign-in maps to: a GitHub sign-in by the profile's numeric id (a login can be
 * renamed and then registered by someone else, so it never identifies anyone), the development
 * sign-in by login. A user with no membership anywhere is refused: a session that can see nothing
 * would only be a confusing dead end, and users are created by an admin adding a member (`kiln
 * member add`), never by signing in.
 */
export async function findSignInUser(
  db: DbOrTx,
  input: { login: string } | { forgeId: number },
): Promise<SignInUser | null> {
  const rows =
    "forgeId" in input
      ? await db.$queryRaw<SignInUser[]>`
          SELECT u.id, u.login FROM app_user u
          WHERE u.forge_id = ${input.forgeId}::bigint AND EXISTS (SELECT 1 FROM membership m WHERE m.user_id = u.id)`
      : await db.$queryRaw<SignInUser[]>`
          SELECT u.id, u.login FROM app_user u
          WHERE u.login = ${input.login} AND EXISTS (SELECT 1 FROM membership m WHERE m.user_id = u.id)`;
  return rows[0] ?? null;
}
