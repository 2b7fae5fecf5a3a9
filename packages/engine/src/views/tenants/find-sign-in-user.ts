import type { DbOrTx } from "@kiln/db";

export interface SignInUser {
  id: string;
  login: string;
}

/**
 * The Kiln user a sign-in (GitHub or the development sign-in) maps to. A login with no membership
 * anywhere is refused: a session that can see nothing would only be a confusing dead end, and
 * users are created by an admin adding a member (`kiln member add`), never by signing in.
 */
export async function findSignInUser(db: DbOrTx, input: { login: string }): Promise<SignInUser | null> {
  const rows = await db.$queryRaw<SignInUser[]>`
    SELECT u.id, u.login FROM app_user u
    WHERE u.login = ${input.login} AND EXISTS (SELECT 1 FROM membership m WHERE m.user_id = u.id)`;
  return rows[0] ?? null;
}
