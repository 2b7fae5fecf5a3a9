import { Button } from "@kiln/ui";
import Link from "next/link";
import type { Membership } from "../types.ts";
import { NavLink } from "./nav-link.tsx";
import { OrgSwitcher } from "./org-switcher.tsx";

// `signOut` is the sign-in route's server action, handed down by the layout: components sit below app/.
export function AppHeader({
  orgs,
  current,
  login,
  signOut,
}: {
  orgs: Membership[];
  current: string;
  login: string;
  signOut: () => Promise<void>;
}) {
  const base = `/orgs/${encodeURIComponent(current)}`;
  return (
    <header className="border-b border-zinc-200 bg-white dark:border-zinc-800 dark:bg-zinc-900">
      <div className="mx-auto flex max-w-7xl flex-wrap items-center gap-3 px-4 py-2.5 sm:px-6">
        <Link
          href="/orgs"
          className="mr-1 rounded text-base font-semibold tracking-tight focus-visible:outline-2 focus-visible:outline-blue-600"
        >
          Kiln
        </Link>
        <OrgSwitcher orgs={orgs} current={current} />
        <nav aria-label="Main" className="flex items-center gap-1">
          <NavLink href={base} exact>
            Overview
          </NavLink>
          <NavLink href={`${base}/runs`}>Runs</NavLink>
          <NavLink href={`${base}/schedules`}>Schedules</NavLink>
          <NavLink href={`${base}/provenance`}>Provenance</NavLink>
          <NavLink href={`${base}/environments`}>Environments</NavLink>
          <NavLink href={`${base}/approvals`}>Approvals</NavLink>
          <NavLink href={`${base}/flaky`}>Flaky jobs</NavLink>
          <NavLink href={`${base}/usage`}>Usage</NavLink>
          <NavLink href={`${base}/settings`}>Settings</NavLink>
        </nav>
        <div className="ml-auto flex items-center gap-3 text-sm">
          <span className="text-zinc-600 dark:text-zinc-400" data-testid="signed-in-as">
            {login}
          </span>
          <form action={signOut}>
            <Button type="submit" size="sm" variant="ghost">
              Sign out
            </Button>
          </form>
        </div>
      </div>
    </header>
  );
}
