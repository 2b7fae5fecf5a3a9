import { buttonClasses } from "@kiln/ui";
import Link from "next/link";
import type { ReactNode } from "react";
import { OrgProvider } from "@/components/org-context.tsx";
import { signOutAction } from "@/app/(auth)/sign-in/actions.ts";
import { AppHeader } from "@/components/shell/app-header.tsx";
import { QuotaBanner } from "@/components/usage/quota-banner.tsx";
import { currentUser } from "@/server/auth/index.ts";
import { getQueryClient, trpc } from "@/trpc/server.tsx";

export const dynamic = "force-dynamic";

/**
 * Every org page: header, org switcher, and the membership gate. The gate is for the UI only (a
 * clear page instead of a wall of errors); each procedure checks membership again in its own query.
 */
export default async function OrgLayout({
  children,
  params,
}: {
  children: ReactNode;
  params: Promise<{ org: string }>;
}) {
  const { org } = await params;
  const user = await currentUser();
  // Signed out: render the page alone, whose requireUser() redirects to sign-in with its own full
  // path (a layout does not know which page below it was asked for).
  if (!user) return children;
  const orgs = await getQueryClient().fetchQuery(trpc.tenants.list.queryOptions());
  const membership = orgs.find((o) => o.slug === org);
  // The 80% / 100% minute-quota banner (docs/adr/0045), on every page of the org.
  const quota = membership ? await getQueryClient().fetchQuery(trpc.usage.quota.queryOptions({ org })) : null;
  return (
    <>
      <AppHeader orgs={orgs} current={org} login={user.login} signOut={signOutAction} />
      {membership ? (
        <OrgProvider value={{ slug: org, role: membership.role, login: user.login }}>
          {quota ? <QuotaBanner org={org} quota={quota} /> : null}
          <main id="main" className="mx-auto max-w-7xl px-4 py-6 sm:px-6">
            {children}
          </main>
        </OrgProvider>
      ) : (
        <main id="main" className="mx-auto max-w-xl px-6 py-16 text-center" data-testid="not-a-member">
          <h1 className="text-xl font-semibold">You are not a member of an org named “{org}”</h1>
          <p className="mt-2 text-sm text-zinc-600 dark:text-zinc-400">
            Runs, jobs and logs of other organisations are not visible to you.
          </p>
          <Link href="/orgs" className={`${buttonClasses("secondary")} mt-6`}>
            Your organisations
          </Link>
        </main>
      )}
    </>
  );
}
