"use client";
import { Card, DataTable, EmptyState, LoadingBlock } from "@kiln/ui";
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
          <DataTable
            rows={q.data.keys}
            rowKey={(k) => k.kid}
            rowProps={(k) => ({ "data-kid": k.kid })}
            testId="identity-keys"
            empty={<EmptyState title="No signing key yet">The first token a job asks for creates one.</EmptyState>}
            columns={[
              { key: "kid", header: "Key id", className: "font-mono", cell: (k) => k.kid },
              { key: "created", header: "Created", cell: (k) => <RelativeTime iso={k.createdAt} now={now} /> },
              {
                key: "state",
                header: "State",
                cell: (k) =>
                  k.retiredAt ? (
                    <>retired; in the JWKS until {new Date(k.verifyUntil ?? k.retiredAt).toLocaleTimeString()}</>
                  ) : (
                    "signing"
                  ),
              },
            ]}
          />
        </div>
      )}
    </Card>
  );
}
