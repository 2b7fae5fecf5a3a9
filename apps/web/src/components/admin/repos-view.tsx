"use client";
import { Card, ConfirmButton, DataTable, EmptyState, Notices } from "@kiln/ui";
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
  const refresh = () => qc.invalidateQueries({ queryKey: trpc.repos.list.queryKey({ org }) });
  const disconnect = useMutation(
    trpc.repos.disconnect.mutationOptions({
      onMutate: () => {
        setNote(null);
        setError(null);
      },
      onSuccess: async (r) => {
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
              <DataTable
                rows={data.repos}
                rowKey={(r) => r.id}
                rowProps={(r) => ({ "data-repo": r.fullName })}
                testId="repos-table"
                empty={
                  <EmptyState title="No repositories">
                    Connect one below to start runs from its pushes and pull requests.
                  </EmptyState>
                }
                columns={[
                  {
                    key: "repo",
                    header: "Repository",
                    cell: (r) => (
                      <>
                        <span className="font-mono">{r.fullName}</span>
                        <span className="block text-xs text-zinc-500 dark:text-zinc-400">
                          {r.workflowPath} · {r.defaultBranch}
                        </span>
                      </>
                    ),
                  },
                  {
                    key: "state",
                    header: "State",
                    cell: (r) =>
                      r.disconnectedAt ? (
                        <span className="text-zinc-500 dark:text-zinc-400">
                          disconnected <RelativeTime iso={r.disconnectedAt} now={now} />
                        </span>
                      ) : (
                        <span className="text-emerald-700 dark:text-emerald-400">connected</span>
                      ),
                  },
                  {
                    key: "last-delivery",
                    header: "Last delivery",
                    cell: (r) =>
                      r.lastDelivery ? (
                        <span>
                          {r.lastDelivery.event} {r.lastDelivery.outcome}{" "}
                          <RelativeTime iso={r.lastDelivery.receivedAt} now={now} />
                        </span>
                      ) : (
                        "none yet"
                      ),
                  },
                  {
                    key: "forge-credential",
                    header: "Forge credential",
                    cell: (r) => CREDENTIAL[r.forgeCredential.state],
                  },
                  {
                    key: "actions",
                    header: "Actions",
                    hideHeader: true,
                    className: "text-right",
                    cell: (r) =>
                      r.disconnectedAt ? null : (
                        <ConfirmButton
                          label="Disconnect"
                          ariaLabel={`Disconnect ${r.fullName}`}
                          title={`Disconnect ${r.fullName}?`}
                          confirmLabel={`Confirm disconnect of ${r.fullName}`}
                          pendingLabel="Disconnecting…"
                          onConfirm={() => disconnect.mutateAsync({ org, repoId: r.id })}
                        >
                          Its history stays; new deliveries are ignored.
                        </ConfirmButton>
                      ),
                  },
                ]}
              />
              <Notices error={error} note={note} />
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
