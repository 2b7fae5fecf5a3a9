import NextAuth from "next-auth";
import { cache } from "react";
import { authConfig } from "./config.ts";

// Lazy: the config (and its env validation) is built on the first request, not during `next build`.
const nextAuth = NextAuth(() => authConfig());
export const { handlers, signIn, signOut } = nextAuth;
const { auth } = nextAuth;

export interface SessionUser {
  id: string;
  login: string;
}

/**
 * The signed-in user, or null. Memoised per server render (layout, page and their tRPC calls share
 * one JWT decryption); route handlers get a fresh call each time.
 */
export const currentUser = cache(async (): Promise<SessionUser | null> => {
  const session = await auth();
  const user = session?.user as { id?: unknown; login?: unknown } | undefined;
  return typeof user?.id === "string" && user.id !== "" && typeof user.login === "string"
    ? { id: user.id, login: user.login }
    : null;
});
