import { buttonClasses } from "@kiln/ui";
import Link from "next/link";
import { redirect } from "next/navigation";
import { currentUser } from "@/server/auth/index.ts";
import { authEnvProblem } from "@/server/auth/env.ts";

export const dynamic = "force-dynamic";

// Signed-in users go to their orgs; everyone else sees what the API offers and where to sign in.
const ENDPOINTS: [string, string][] = [
  ["POST /v1/webhooks/github", "GitHub push / pull_request / ping, verified with X-Hub-Signature-256"],
  ["POST /v1/repos/{repo_id}/workflow-runs", "manual trigger (Idempotency-Key required)"],
  ["GET /v1/workflow-runs/{run_id}", "run, jobs and attempts with outcomes, causes and phase timings"],
  ["POST /v1/workflow-runs/{run_id}/cancel", "cancel; the run stays cancelling until every attempt stopped"],
  ["POST /v1/workflow-runs/{run_id}/retry", "new run with the same pinned definition"],
];

export default async function Home() {
  if (authEnvProblem() === null && (await currentUser())) redirect("/orgs");
  return (
    <main id="main" className="mx-auto max-w-3xl px-6 py-12">
      <h1 className="text-3xl font-semibold tracking-tight">Kiln</h1>
      <p className="mt-2 text-zinc-600 dark:text-zinc-400">
        CI/CD that tells you whether a red run is your code or the platform.
      </p>
      <Link href="/sign-in" className={`${buttonClasses("primary")} mt-6`}>
        Sign in to the dashboard
      </Link>
      <h2 className="mt-12 text-lg font-semibold">API</h2>
      <p className="mt-1 text-sm text-zinc-600 dark:text-zinc-400">
        Every call below needs an org-scoped bearer token from <code>npm run kiln -- token create</code>.
      </p>
      <table className="mt-4 w-full text-left text-sm">
        <thead>
          <tr className="border-b border-zinc-300 dark:border-zinc-700">
            <th className="py-2 pr-4 font-medium">Endpoint</th>
            <th className="py-2 font-medium">What it does</th>
          </tr>
        </thead>
        <tbody>
          {ENDPOINTS.map(([path, what]) => (
            <tr key={path} className="border-b border-zinc-200 dark:border-zinc-800">
              <td className="py-2 pr-4 font-mono text-xs">{path}</td>
              <td className="py-2">{what}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <h2 className="mt-12 text-lg font-semibold">Transparency log</h2>
      <p className="mt-1 text-sm text-zinc-600 dark:text-zinc-400">
        Public, no token: the signed checkpoint at <code>/tlog/checkpoint</code>, C2SP tiles under{" "}
        <code>/tlog/tile/</code>, entries and proofs under <code>/v1/tlog/</code>.{" "}
        <Link href="/transparency-log" className="text-blue-700 hover:underline dark:text-blue-300">
          See the log&apos;s state and verifier key
        </Link>
        .
      </p>
    </main>
  );
}
