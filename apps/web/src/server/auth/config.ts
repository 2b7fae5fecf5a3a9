import { findSignInUser } from "@/server/trpc/engine-views.ts";
import type { NextAuthConfig } from "next-auth";
import Credentials from "next-auth/providers/credentials";
import GitHub from "next-auth/providers/github";
import { services } from "../context.ts";
import { authEnv } from "./env.ts";

export const DEV_LOGIN_PROVIDER = "dev-login";

/** The GitHub OAuth profile's numeric `id` (it may arrive as a number or a numeric string). */
function githubUserId(profile: { id?: unknown } | undefined): number | null {
  const raw = profile?.id;
  const n = typeof raw === "number" ? raw : typeof raw === "string" && /^\d{1,15}$/.test(raw) ? Number(raw) : NaN;
  return Number.isSafeInteger(n) && n > 0 ? n : null;
}

/**
 * Auth.js (next-auth v5) with JWT sessions and no database adapter. The session carries only who
 * the user is (Kiln user id and login); which orgs they may see and with what role is read from
 * `membership` on every request, so revoking access never waits for a token to expire.
 */
export function authConfig(): NextAuthConfig {
  const env = authEnv();
  const providers: NextAuthConfig["providers"] = [];
  if (env.github) providers.push(GitHub({ clientId: env.github.clientId, clientSecret: env.github.clientSecret }));
  if (env.devLogin) {
    providers.push(
      Credentials({
        id: DEV_LOGIN_PROVIDER,
        name: "Development sign-in",
        credentials: { login: { label: "Login", type: "text" } },
        // No password: only offered when KILN_DEV_LOGIN=1. The login must already be a member.
        authorize: async (creds) => {
          const login = typeof creds.login === "string" ? creds.login.trim() : "";
          if (!login || login.length > 100) return null;
          const user = await findSignInUser(services().db, { login });
          return user ? { id: user.id, name: user.login } : null;
        },
      }),
    );
  }
  return {
    secret: env.secret,
    trustHost: env.trustHost,
    providers,
    session: { strategy: "jwt", maxAge: 12 * 60 * 60 },
    pages: { signIn: "/sign-in", error: "/sign-in" },
    callbacks: {
      // A GitHub identity is admitted only if its numeric user id is a Kiln member's (matched like
      // webhook senders are, ADR 0005: a login can be renamed and re-registered, the id cannot);
      // users are created by `kiln member add --forge-id`, never by signing in.
      signIn: async ({ account, profile }) => {
        if (account?.provider !== "github") return true;
        const forgeId = githubUserId(profile);
        return forgeId !== null && (await findSignInUser(services().db, { forgeId })) !== null;
      },
      jwt: async ({ token, user, account, profile }) => {
        if (!account) return token; // not a sign-in: keep the identity already in the token
        if (account.provider === "github") {
          const forgeId = githubUserId(profile);
          const found = forgeId === null ? null : await findSignInUser(services().db, { forgeId });
          if (!found) throw new Error("GitHub account is not a Kiln member");
          return { ...token, uid: found.id, login: found.login };
        }
        return { ...token, uid: user.id, login: user.name };
      },
      session: async ({ session, token }) => {
        const uid = typeof token.uid === "string" ? token.uid : "";
        const login = typeof token.login === "string" ? token.login : "";
        return { ...session, user: { ...session.user, id: uid, name: login, login } };
      },
    },
  };
}
