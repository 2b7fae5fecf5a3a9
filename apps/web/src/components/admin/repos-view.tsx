"use client";
import { Button, Card, EmptyState } from "@kiln/ui";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { useTRPC } from "@/trpc/client.tsx";
import { RelativeTime, useNow } from "../time.tsx";
import type { ReposAdminData } from "../types.ts";
import { AdminPage, SecretOnce } from "./admin-page.tsx";
import { ConnectRepoForm, type Connected } from "./connect-repo-form.tsx";

type ReposData = ReposAdminData;
type Repo = ReposData["repos"][number];

const CREDENTIAL: Record<Repo["forgeCredential"]["state"], string> = {
  none: "None: no commit statuses are posted",
  token: "Per-repo token",
  app: "GitHub App installation",
};

/**
 * The org's repositories (issue 19): connect one (its webhook secret is shown once), see each one's
 * last webhook delivery and forge credential, disconnect. Refreshed every 5 s, so a delivery the
 * forge just made shows up while the admin watches.
 */
export function ReposView({ org }: { org: string }) {
  const trpc = useTRPC();
  const qc = useQueryClient();
  const now = useNow(15_000);
  const q = useQuery({ ...trpc.repos.list.queryOptions({ org }), refetchInterval: 5_000 });
  const [connected, setConnected] = useState<Connected | null>(null);
  const [note, setNote] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [confirming, setConfirming] = useState<string | null>(null);
  const refresh = () => qc.invalidateQueries({ queryKey: trpc.repos.list.queryKey({ org }) });
  const disconnect = useMutation(
    trpc.repos.disconnect.mutationOptions({
      onMutate: () => {
        setNote(null);
        setError(null);
      },
      onSuccess: async (r) => {
        setConfirming(null);
        await refresh();
        setNote(
          `Disconnected ${r.fullName}. Its history stays; new deliveries are ignored.${
            r.unfinishedRuns > 0 ? ` ${r.unfinishedRuns} unfinished run(s) will finish.` : ""
          }`,
        );
        document.querySelector<HTMLElement>("#repos-heading")?.focus();
      },
      onError: (e) => setError(`Could not disconnect: ${e.message}`),
    }),
  );
  const webhookUrl = (data: ReposData) =>
    data.webhookUrl ??
    (typeof window === "undefined" ? "/v1/webhooks/github" : `${window.location.origin}/v1/webhooks/github`);
  return (
    <AdminPage org={org} title="Repositories" what="Repositories" query={q}>
      {() => {
        const data = q.data as ReposData;
        return (
          <>
            {connected ? (
              <SecretOnce
                title={`${connected.fullName} is connected: its webhook secret`}
                secret={connected.webhookSecret}
                testId="webhook-secret"
                onDismiss={() => setConnected(null)}
              >
                <p className="mt-1">
                  In the forge&apos;s webhook settings use the payload URL{" "}
                  <code className="font-mono" data-testid="webhook-url">
                    {webhookUrl(data)}
                  </code>
                  , content type <code className="font-mono">application/json</code>, this secret, and the <em>push</em>{" "}
                  and <em>pull request</em> events.
                </p>
              </SecretOnce>
            ) : null}
            <Card
              title={
                <span id="repos-heading" tabIndex={-1}>
                  Repositories of {org}
                </span>
              }
              id="repos"
            >
              {data.repos.length === 0 ? (
                <EmptyState title="No repositories">
                  Connect one below to start runs from its pushes and pull requests.
                </EmptyState>
              ) : (
                <table className="w-full text-left text-sm" data-testid="repos-table">
                  <thead className="text-xs text-zinc-500 dark:text-zinc-400">
                    <tr>
                      <th scope="col" className="py-1.5 font-medium">
                        Repository
                      </th>
                      <th scope="col" className="py-1.5 font-medium">
                        State
                      </th>
                      <th scope="col" className="py-1.5 font-medium">
                        Last delivery
                      </th>
                      <th scope="col" className="py-1.5 font-medium">
                        Forge credential
                      </th>
                      <th scope="col" className="py-1.5 font-medium">
                        <span className="sr-only">Actions</span>
                      </th>
                    </tr>
                  </thead>
                  <tbody className="divide-y divide-zinc-100 dark:divide-zinc-800">
                    {data.repos.map((r) => (
                      <tr key={r.id} data-repo={r.fullName}>
                        <td className="py-2">
                          <span className="font-mono">{r.fullName}</span>
                          <span className="block text-xs text-zinc-500 dark:text-zinc-400">
                            {r.workflowPath} · {r.defaultBranch}
                          </span>
                        </td>
                        <td className="py-2" data-field="state">
                          {r.disconnectedAt ? (
                            <span className="text-zinc-500 dark:text-zinc-400">
                              disconnected <RelativeTime iso={r.disconnectedAt} now={now} />
                            </span>
                          ) : (
                            <span className="text-emerald-700 dark:text-emerald-400">connected</span>
                          )}
                        </td>
                        <td className="py-2" data-field="last-delivery">
                          {r.lastDelivery ? (
                            <span>
                              {r.lastDelivery.event} {r.lastDelivery.outcome}{" "}
                              <RelativeTime iso={r.lastDelivery.receivedAt} now={now} />
                            </span>
                          ) : (
                            "none yet"
                          )}
                        </td>
                        <td className="py-2" data-field="forge-credential">
                          {CREDENTIAL[r.forgeCredential.state]}
                        </td>
                        <td className="py-2 text-right">
                          {r.disconnectedAt ? null : confirming === r.id ? (
                            <span className="inline-flex gap-2">
                              <Button
                                size="sm"
                                variant="danger"
                                autoFocus
                                disabled={disconnect.isPending}
                                onClick={() => disconnect.mutate({ org, repoId: r.id })}
                              >
                                {disconnect.isPending ? "Disconnecting…" : `Confirm disconnect of ${r.fullName}`}
                              </Button>
                              <Button size="sm" variant="ghost" onClick={() => setConfirming(null)}>
                                Keep
                              </Button>
                            </span>
                          ) : (
                            <Button
                              size="sm"
                              variant="danger"
                              aria-label={`Disconnect ${r.fullName}`}
                              onClick={() => setConfirming(r.id)}
                            >
                              Disconnect
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
              <ConnectRepoForm
                org={org}
                onConnected={async (c) => {
                  setNote(null);
                  await refresh();
                  setConnected(c);
                  // The secret is what the admin needs next: take focus there.
                  requestAnimationFrame(() => document.querySelector<HTMLElement>("#webhook-secret-title")?.focus());
                }}
              />
            </Card>
          </>
        );
      }}
    </AdminPage>
  );
}
