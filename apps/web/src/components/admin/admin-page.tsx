"use client";
import { ErrorState, LoadingBlock } from "@kiln/ui";
import Link from "next/link";
import type { ReactNode } from "react";
import { useOrg } from "../org-context.tsx";
import { QueryError } from "../query-error.tsx";

/**
 * The frame of every admin console page (repositories, members, API tokens): the way back to
 * Settings, the page title, and the admins-only, loading and error states. The server refuses
 * non-admins in the tenant query; this only turns that into a clear page.
 */
export function AdminPage({
  org,
  title,
  query,
  what,
  children,
}: {
  org: string;
  title: string;
  query: { isPending: boolean; isError: boolean; error: unknown; refetch: () => unknown };
  /** What the page loads, for "Loading …" and "Could not load …". */
  what: string;
  children: () => ReactNode;
}) {
  const { role } = useOrg();
  const header = (
    <div>
      <nav aria-label="Breadcrumb" className="text-sm">
        <Link
          href={`/orgs/${org}/settings`}
          className="text-zinc-600 underline-offset-2 hover:underline dark:text-zinc-400"
        >
          Settings
        </Link>
      </nav>
      <h1 className="text-xl font-semibold tracking-tight">{title}</h1>
    </div>
  );
  let body: ReactNode;
  if (role !== "admin")
    body = (
      <ErrorState
        title="Admins only"
        message={`You are a ${role} of ${org}; only its admins can see and change its ${what.toLowerCase()}.`}
      />
    );
  else if (query.isPending) body = <LoadingBlock label={`Loading ${what.toLowerCase()}`} rows={4} />;
  else if (query.isError) body = <QueryError error={query.error} what={what} onRetry={() => void query.refetch()} />;
  else body = children();
  return (
    <div className="space-y-6">
      {header}
      {body}
    </div>
  );
}

/** The links between the admin pages, shown on Settings. */
export function AdminLinks({ org }: { org: string }) {
  const link = "underline-offset-2 hover:underline";
  return (
    <p className="mt-1 flex gap-4 text-sm" data-testid="admin-links">
      <Link href={`/orgs/${org}/settings/repos`} className={link}>
        Repositories
      </Link>
      <Link href={`/orgs/${org}/settings/members`} className={link}>
        Members
      </Link>
      <Link href={`/orgs/${org}/settings/tokens`} className={link}>
        API tokens
      </Link>
      <Link href={`/orgs/${org}/settings/secrets`} className={link}>
        Secrets
      </Link>
      <Link href={`/orgs/${org}/audit`} className={link}>
        Audit trail
      </Link>
      <Link href={`/orgs/${org}/settings/fleet`} className={link}>
        Fleet
      </Link>
    </p>
  );
}

/** A one-time secret: shown until dismissed, with a copy button; never fetched again. */
export function SecretOnce({
  title,
  secret,
  children,
  onDismiss,
  testId,
}: {
  title: string;
  secret: string;
  children?: ReactNode;
  onDismiss: () => void;
  testId: string;
}) {
  return (
    <section
      aria-labelledby={`${testId}-title`}
      className="rounded-md border border-amber-300 bg-amber-50 p-4 text-sm dark:border-amber-700 dark:bg-amber-950"
      data-testid={testId}
    >
      <h2 id={`${testId}-title`} className="font-semibold" tabIndex={-1}>
        {title}
      </h2>
      <p className="mt-1 text-zinc-700 dark:text-zinc-300">Copy it now: Kiln shows it only this once.</p>
      {children}
      <div className="mt-2 flex flex-wrap items-center gap-2">
        <code
          className="break-all rounded bg-white px-2 py-1 font-mono dark:bg-zinc-900"
          data-testid={`${testId}-value`}
        >
          {secret}
        </code>
        <button
          type="button"
          className="rounded border border-zinc-300 px-2 py-1 text-xs focus-visible:outline-2 focus-visible:outline-blue-600 dark:border-zinc-700"
          onClick={() => void navigator.clipboard?.writeText(secret)}
        >
          Copy
        </button>
        <button
          type="button"
          className="rounded px-2 py-1 text-xs underline-offset-2 hover:underline focus-visible:outline-2 focus-visible:outline-blue-600"
          onClick={onDismiss}
        >
          I have copied it
        </button>
      </div>
    </section>
  );
}
