import { EmptyState } from "@kiln/ui";
import Link from "next/link";
import { redirect } from "next/navigation";
import { requireUser } from "@/server/auth/require-user.ts";
import { getQueryClient, trpc } from "@/trpc/server.tsx";

export const dynamic = "force-dynamic";
export const metadata = { title: "Organisations · Kiln" };

/** The org picker; with exactly one membership there is nothing to pick. */
export default async function OrgsPage() {
  const user = await requireUser("/orgs");
  const orgs = await getQueryClient().fetchQuery(trpc.tenants.list.queryOptions());
  if (orgs.length === 1 && orgs[0]) redirect(`/orgs/${orgs[0].slug}`);
  return (
    <main id="main" className="mx-auto max-w-xl px-6 py-12">
      <h1 className="text-2xl font-semibold tracking-tight">Choose an organisation</h1>
      <p className="mt-1 text-sm text-zinc-600 dark:text-zinc-400">Signed in as {user.login}.</p>
      {orgs.length === 0 ? (
        <div className="mt-6">
          <EmptyState title="You are not a member of any org">Ask an org admin to add your login.</EmptyState>
        </div>
      ) : (
        <ul className="mt-6 divide-y divide-zinc-200 rounded-lg border border-zinc-200 bg-white dark:divide-zinc-800 dark:border-zinc-800 dark:bg-zinc-900">
          {orgs.map((o) => (
            <li key={o.slug}>
              <Link
                href={`/orgs/${o.slug}`}
                className="flex items-center justify-between px-4 py-3 hover:bg-zinc-50 focus-visible:outline-2 focus-visible:-outline-offset-2 focus-visible:outline-blue-600 dark:hover:bg-zinc-800"
              >
                <span className="font-medium">{o.slug}</span>
                <span className="text-sm text-zinc-500">{o.role}</span>
              </Link>
            </li>
          ))}
        </ul>
      )}
    </main>
  );
}
