"use client";
import { Button, Card, EmptyState, ErrorState, formatTimestamp, LoadingBlock } from "@kiln/ui";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import Link from "next/link";
import { useState } from "react";
import { useTRPC } from "@/trpc/client.tsx";
import { useOrg } from "../org-context.tsx";
import { QueryError } from "../query-error.tsx";
import { RelativeTime, useNow } from "../time.tsx";
import { SecretOnce } from "../admin/admin-page.tsx";
import { CreateTokenForm, type CreatedToken } from "./create-token-form.tsx";

const STATE_CLASS = {
  active: "text-emerald-700 dark:text-emerald-400",
  expired: "text-amber-700 dark:text-amber-400",
  revoked: "text-zinc-500 dark:text-zinc-400",
} as const;

/**
 * The org's API tokens: who may call /v1 on its behalf, until when, and when each was last used
 * (to the minute). Admins only; the server refuses everyone else in the tenant query. Tokens are
 * created here or with `npm run kiln -- token create` (the secret is shown once, never stored).
 * Refreshed every 30 s, so last use and revocations from elsewhere appear.
 */
export function ApiTokensView({ org }: { org: string }) {
  const trpc = useTRPC();
  const qc = useQueryClient();
  const { role } = useOrg();
  const now = useNow(30_000);
  const q = useQuery({ ...trpc.tokens.list.queryOptions({ org }), refetchInterval: 30_000 });
  const [created, setCreated] = useState<CreatedToken | null>(null);
  const [note, setNote] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const revoke = useMutation(
    trpc.tokens.revoke.mutationOptions({
      onMutate: () => {
        setNote(null);
        setError(null);
      },
      onSuccess: async (t) => {
        await qc.invalidateQueries({ queryKey: trpc.tokens.list.queryKey({ org }) });
        setNote(`Revoked ${t.name}. Requests with it now answer 401 AUTH.TOKEN_REVOKED.`);
        // The focused button is gone with its row; keep the keyboard user in the card.
        document.querySelector<HTMLElement>("#api-tokens-heading")?.focus();
      },
      onError: (e) => setError(`Could not revoke the token: ${e.message}`),
    }),
  );
  const header = (
    <div>
      <p className="text-sm">
        <Link
          href={`/orgs/${org}/settings`}
          className="text-zinc-600 underline-offset-2 hover:underline dark:text-zinc-400"
        >
          Settings
        </Link>
      </p>
      <h1 className="text-xl font-semibold tracking-tight">API tokens</h1>
    </div>
  );
  if (role !== "admin")
    return (
      <div className="space-y-6">
        {header}
        <ErrorState
          title="Admins only"
          message={`You are a ${role} of ${org}; only its admins can see its API tokens.`}
        />
      </div>
    );
  if (q.isPending)
    return (
      <div className="space-y-6">
        {header}
        <LoadingBlock label="Loading API tokens" rows={4} />
      </div>
    );
  if (q.isError)
    return (
      <div className="space-y-6">
        {header}
        <QueryError error={q.error} what="API tokens" onRetry={() => void q.refetch()} />
      </div>
    );
  const tokens = q.data;
  return (
    <div className="space-y-6">
      {header}
      {created ? (
        <SecretOnce
          title={`Token ${created.name}`}
          secret={created.token}
          testId="new-token"
          onDismiss={() => setCreated(null)}
        >
          <p className="mt-1">
            Send it as <code className="font-mono">Authorization: Bearer …</code>. It expires{" "}
            <time dateTime={created.expiresAt}>{formatTimestamp(created.expiresAt)}</time>.
          </p>
        </SecretOnce>
      ) : null}
      <Card
        title={
          <span id="api-tokens-heading" tabIndex={-1}>
            Tokens of {org}
          </span>
        }
        id="api-tokens"
      >
        <p className="mb-3 text-sm text-zinc-600 dark:text-zinc-400">
          Create one below or with <code className="font-mono">npm run kiln -- token create {org} --role member</code>.
          Revoking takes effect on the next request.
        </p>
        {tokens.length === 0 ? (
          <EmptyState title="No API tokens">Nothing can call the API on behalf of {org}.</EmptyState>
        ) : (
          <table className="w-full text-left text-sm" data-testid="api-tokens">
            <thead className="text-xs text-zinc-500 dark:text-zinc-400">
              <tr>
                <th scope="col" className="py-1.5 font-medium">
                  Name
                </th>
                <th scope="col" className="py-1.5 font-medium">
                  Role
                </th>
                <th scope="col" className="py-1.5 font-medium">
                  State
                </th>
                <th scope="col" className="py-1.5 font-medium">
                  Expires
                </th>
                <th scope="col" className="py-1.5 font-medium">
                  Last used
                </th>
                <th scope="col" className="py-1.5 font-medium">
                  <span className="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody className="divide-y divide-zinc-100 dark:divide-zinc-800">
              {tokens.map((t) => (
                <tr key={t.id} data-token-id={t.id}>
                  <td className="py-2 font-mono">{t.name}</td>
                  <td className="py-2">{t.role}</td>
                  <td className={`py-2 ${STATE_CLASS[t.state]}`} data-testid="token-state">
                    {t.state}
                  </td>
                  <td className="py-2 tabular-nums">
                    {/* Server and browser may format dates in different locales: the browser's text wins. */}
                    <time dateTime={t.expiresAt} suppressHydrationWarning>
                      {formatTimestamp(t.expiresAt)}
                    </time>
                  </td>
                  <td className="py-2">{t.lastUsedAt ? <RelativeTime iso={t.lastUsedAt} now={now} /> : "never"}</td>
                  <td className="py-2 text-right">
                    {t.state === "revoked" ? null : (
                      <Button
                        size="sm"
                        variant="danger"
                        aria-label={`Revoke ${t.name}`}
                        disabled={revoke.isPending && revoke.variables?.tokenId === t.id}
                        onClick={() => revoke.mutate({ org, tokenId: t.id })}
                      >
                        {revoke.isPending && revoke.variables?.tokenId === t.id ? "Revoking…" : "Revoke"}
                      </Button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
        {error ? (
          <p role="alert" className="mt-2 text-sm text-red-700 dark:text-red-400">
            {error}
          </p>
        ) : null}
        <p role="status" className="mt-2 text-sm text-emerald-700 empty:hidden dark:text-emerald-400">
          {note ?? ""}
        </p>
        <CreateTokenForm
          org={org}
          onCreated={async (t) => {
            setNote(null);
            await qc.invalidateQueries({ queryKey: trpc.tokens.list.queryKey({ org }) });
            setCreated(t);
            requestAnimationFrame(() => document.querySelector<HTMLElement>("#new-token-title")?.focus());
          }}
        />
      </Card>
    </div>
  );
}
