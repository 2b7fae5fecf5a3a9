"use client";
import { Card, EmptyState, LoadingBlock } from "@kiln/ui";
import { useQuery } from "@tanstack/react-query";
import { useTRPC } from "@/trpc/client.tsx";
import { QueryError } from "../query-error.tsx";
import { RelativeTime } from "../time.tsx";

/**
 * Workload identity (issue 16, ADR 0024): the OIDC issuer a relying party (a cloud's token service,
 * a deploy target) trusts for this org's job tokens, and the signing keys its JWKS serves now.
 * Read only; refreshed every 60 s, so a rotation shows without a reload.
 */
export function IdentityCard({ org, now }: { org: string; now: number }) {
  const trpc = useTRPC();
  const q = useQuery({ ...trpc.tenants.identity.queryOptions({ org }), refetchInterval: 60_000 });
  return (
    <Card title="Workload identity (OIDC)" id="identity">
      {q.isPending ? (
        <LoadingBlock label="Loading identity" rows={2} />
      ) : q.isError ? (
        <QueryError error={q.error} what="Identity" onRetry={() => void q.refetch()} />
      ) : (
        <div className="space-y-3 text-sm" data-testid="identity-card">
          <p>
            Jobs ask for ID tokens at <code className="font-mono">$KILN_ID_TOKEN_URL</code>. Relying parties trust the
            issuer{" "}
            <code className="font-mono" data-testid="issuer">
              {q.data.issuer}
            </code>{" "}
            (
            <a className="underline-offset-2 hover:underline" href={q.data.discoveryUrl}>
              discovery
            </a>
            ,{" "}
            <a className="underline-offset-2 hover:underline" href={q.data.jwksUrl}>
              JWKS
            </a>
            ) and should require <code className="font-mono">trust_class</code> = trusted.
          </p>
          {q.data.keys.length === 0 ? (
            <EmptyState title="No signing key yet">The first token a job asks for creates one.</EmptyState>
          ) : (
            <table className="w-full text-left text-sm" data-testid="identity-keys">
              <thead className="text-xs text-zinc-500 dark:text-zinc-400">
                <tr>
                  <th scope="col" className="py-1 pr-3 font-medium">
                    Key id
                  </th>
                  <th scope="col" className="py-1 pr-3 font-medium">
                    Created
                  </th>
                  <th scope="col" className="py-1 font-medium">
                    State
                  </th>
                </tr>
              </thead>
              <tbody className="divide-y divide-zinc-200 dark:divide-zinc-800">
                {q.data.keys.map((k) => (
                  <tr key={k.kid} data-kid={k.kid}>
                    <td className="py-1.5 pr-3 font-mono">{k.kid}</td>
                    <td className="py-1.5 pr-3">
                      <RelativeTime iso={k.createdAt} now={now} />
                    </td>
                    <td className="py-1.5">
                      {k.retiredAt ? (
                        <>retired; in the JWKS until {new Date(k.verifyUntil ?? k.retiredAt).toLocaleTimeString()}</>
                      ) : (
                        "signing"
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </div>
      )}
    </Card>
  );
}
