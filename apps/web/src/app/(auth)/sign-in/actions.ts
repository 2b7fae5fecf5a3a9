"use server";
import { AuthError } from "next-auth";
import { redirect } from "next/navigation";
import { safeReturnPath } from "@/server/auth/require-user.ts";
import { DEV_LOGIN_PROVIDER } from "@/server/auth/config.ts";
import { authEnv } from "@/server/auth/env.ts";
import { signIn, signOut } from "@/server/auth/index.ts";

export async function devSignIn(form: FormData): Promise<void> {
  const from = safeReturnPath(String(form.get("from") ?? ""));
  // Checked here as well as by the provider list: a forged post must not reach authorize() either.
  if (!authEnv().devLogin) redirect(`/sign-in?error=DevLoginDisabled&from=${encodeURIComponent(from)}`);
  try {
    await signIn(DEV_LOGIN_PROVIDER, { login: String(form.get("login") ?? ""), redirectTo: from });
  } catch (e) {
    // signIn redirects by throwing; only Auth.js's own refusals are turned into a message.
    if (e instanceof AuthError)
      redirect(`/sign-in?error=${encodeURIComponent(e.type)}&from=${encodeURIComponent(from)}`);
    throw e;
  }
}

export async function githubSignIn(form: FormData): Promise<void> {
  await signIn("github", { redirectTo: safeReturnPath(String(form.get("from") ?? "")) });
}

export async function signOutAction(): Promise<void> {
  await signOut({ redirectTo: "/sign-in" });
}
