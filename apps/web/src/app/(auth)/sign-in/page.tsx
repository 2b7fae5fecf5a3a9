import { Button, Card } from "@kiln/ui";
import { redirect } from "next/navigation";
import { currentUser } from "@/server/auth/index.ts";
import { authEnv, authEnvProblem } from "@/server/auth/env.ts";
import { safeReturnPath } from "@/server/auth/require-user.ts";
import { devSignIn, githubSignIn } from "./actions.ts";

export const dynamic = "force-dynamic";
export const metadata = { title: "Sign in · Kiln" };

const ERRORS: Record<string, string> = {
  CredentialsSignin: "No Kiln member has that login. An org admin can add you with `kiln member add`.",
  AccessDenied: "Your GitHub account is not a member of any Kiln org. Ask an org admin to add your login.",
  DevLoginDisabled: "Development sign-in is disabled on this server.",
  Configuration: "Sign-in is misconfigured on this server (see the server log).",
};

export default async function SignInPage({
  searchParams,
}: {
  searchParams: Promise<Record<string, string | string[] | undefined>>;
}) {
  const sp = await searchParams;
  const from = safeReturnPath(sp.from);
  const problem = authEnvProblem();
  if (problem) {
    return (
      <main id="main" className="mx-auto max-w-md px-6 py-16">
        <h1 className="text-2xl font-semibold tracking-tight">Sign-in is not configured</h1>
        <p role="alert" className="mt-3 text-sm text-zinc-600 dark:text-zinc-400">
          {problem}
        </p>
      </main>
    );
  }
  if (await currentUser()) redirect(from);
  const env = authEnv();
  const error = typeof sp.error === "string" ? (ERRORS[sp.error] ?? "Sign-in failed. Try again.") : null;
  return (
    <main id="main" className="mx-auto flex min-h-screen max-w-sm flex-col justify-center px-6 py-12">
      <h1 className="mb-6 text-2xl font-semibold tracking-tight">Sign in to Kiln</h1>
      {error ? (
        <p
          role="alert"
          className="mb-4 rounded-md border border-red-200 bg-red-50 px-3 py-2 text-sm text-red-900 dark:border-red-900 dark:bg-red-950 dark:text-red-200"
        >
          {error}
        </p>
      ) : null}
      <div className="space-y-4">
        {env.github ? (
          <Card>
            <form action={githubSignIn}>
              <input type="hidden" name="from" value={from} />
              <Button type="submit" variant="primary" className="w-full">
                Continue with GitHub
              </Button>
            </form>
          </Card>
        ) : null}
        {env.devLogin ? (
          <Card title="Development sign-in">
            <form action={devSignIn} className="space-y-3">
              <input type="hidden" name="from" value={from} />
              <label htmlFor="login" className="block text-sm font-medium">
                Member login
              </label>
              <input
                id="login"
                name="login"
                required
                autoComplete="username"
                className="h-9 w-full rounded-md border border-zinc-300 bg-white px-3 text-sm focus-visible:outline-2 focus-visible:outline-blue-600 dark:border-zinc-700 dark:bg-zinc-950"
              />
              <p className="text-xs text-zinc-500 dark:text-zinc-400">
                No password: enabled by <code>KILN_DEV_LOGIN=1</code> for local use. Never set it in production.
              </p>
              <Button type="submit" variant="primary" className="w-full">
                Sign in
              </Button>
            </form>
          </Card>
        ) : null}
        {!env.github && !env.devLogin ? (
          <p className="text-sm text-zinc-600 dark:text-zinc-400">
            No sign-in method is configured. Set <code>AUTH_GITHUB_ID</code> and <code>AUTH_GITHUB_SECRET</code>{" "}
            (production) or <code>KILN_DEV_LOGIN=1</code> (local development).
          </p>
        ) : null}
      </div>
    </main>
  );
}
