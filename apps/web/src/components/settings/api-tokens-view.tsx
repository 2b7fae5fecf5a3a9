"use client";
import { Button, Card, DataTable, EmptyState, formatTimestamp, Notices } from "@kiln/ui";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { useTRPC } from "@/trpc/client.tsx";
import { RelativeTime, useNow } from "../time.tsx";
import { AdminPage, SecretOnce } from "../admin/admin-page.tsx";
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
  return (
    <AdminPage org={org} title="API tokens" what="API tokens" query={q}>
      {() => (
        <>
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
              Create one below or with{" "}
              <code className="font-mono">npm run kiln -- token create {org} --role member</code>. Revoking takes effect
              on the next request.
            </p>
            <DataTable
              rows={q.data ?? []}
              rowKey={(t) => t.id}
              rowProps={(t) => ({ "data-token-id": t.id })}
              testId="api-tokens"
              empty={<EmptyState title="No API tokens">Nothing can call the API on behalf of {org}.</EmptyState>}
              columns={[
                { key: "name", header: "Name", className: "font-mono", cell: (t) => t.name },
                { key: "role", header: "Role", cell: (t) => t.role },
                {
                  key: "state",
                  header: "State",
                  cell: (t) => (
                    <span className={STATE_CLASS[t.state]} data-testid="token-state">
                      {t.state}
                    </span>
                  ),
                },
                {
                  key: "expires",
                  header: "Expires",
                  className: "tabular-nums",
                  // Server and browser may format dates in different locales: the browser's text wins.
                  cell: (t) => (
                    <time dateTime={t.expiresAt} suppressHydrationWarning>
                      {formatTimestamp(t.expiresAt)}
                    </time>
                  ),
                },
                {
                  key: "last-used",
                  header: "Last used",
                  cell: (t) => (t.lastUsedAt ? <RelativeTime iso={t.lastUsedAt} now={now} /> : "never"),
                },
                {
                  key: "actions",
                  header: "Actions",
                  hideHeader: true,
                  className: "text-right",
                  cell: (t) => {
                    if (t.state === "revoked") return null;
                    const busy = revoke.isPending && revoke.variables?.tokenId === t.id;
                    return (
                      <Button
                        size="sm"
                        variant="danger"
                        aria-label={`Revoke ${t.name}`}
                        disabled={busy}
                        onClick={() => revoke.mutate({ org, tokenId: t.id })}
                      >
                        {busy ? "Revoking…" : "Revoke"}
                      </Button>
                    );
                  },
                },
              ]}
            />
            <Notices error={error} note={note} />
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
        </>
      )}
    </AdminPage>
  );
}
