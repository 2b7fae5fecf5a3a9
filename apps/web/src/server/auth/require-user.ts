import { redirect } from "next/navigation";
import { currentUser, type SessionUser } from "./index.ts";

/** For pages: the signed-in user, or a redirect to sign-in that comes back to `from` afterwards. */
export async function requireUser(from: string): Promise<SessionUser> {
  const user = await currentUser();
  if (!user) redirect(`/sign-in?from=${encodeURIComponent(from)}`);
  return user;
}

/** Only same-site paths may be returned to after sign-in (no open redirects). */
export function safeReturnPath(from: string | string[] | undefined): string {
  const p = Array.isArray(from) ? from[0] : from;
  return p && p.startsWith("/") && !p.startsWith("//") && !p.startsWith("/\\") ? p : "/orgs";
}
