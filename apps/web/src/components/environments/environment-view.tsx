"use client";
import { Button, Card, EmptyState, LoadingBlock } from "@kiln/ui";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import Link from "next/link";
import { useState } from "react";
import { useTRPC } from "@/trpc/client.tsx";
import { canOperate, useOrg } from "../org-context.tsx";
import { QueryError } from "../query-error.tsx";
import { RelativeTime, useNow } from "../time.tsx";
import { DeployConfigCard } from "./deploy-config-card.tsx";
import { DeploymentLockCard } from "./deployment-lock-card.tsx";
import { GateReasons } from "./gate-reasons.tsx";
import { PolicyCard } from "./policy-card.tsx";
import { RequestPromotionCard } from "./request-promotion-card.tsx";

/**
 * The environment page (issue 18): the digest it runs and its provenance, the deployment lock's
 * holder and why it is held, and the history of promotions and rollbacks with each decision and its
 * deploy run. Refreshed every 2 s while a deployment may be moving.
 */
export function EnvironmentView({ org, environmentId }: { org: string; environmentId: string }) {
  const trpc = useTRPC();
  const { role } = useOrg();
  const now = useNow(5_000);
  const env = useQuery({ ...trpc.environments.get.queryOptions({ org, environmentId }), refetchInterval: 2_000 });
  const deps = useQuery({ ...trpc.deployments.list.queryOptions({ org, environmentId }), refetchInterval: 2_000 });
  if (env.isPending || deps.isPending) return <LoadingBlock label="Loading the environment" rows={4} />;
  if (env.isError) return <QueryError error={env.error} what="Environment" onRetry={() => void env.refetch()} />;
  if (deps.isError) return <QueryError error={deps.error} what="Deployments" onRetry={() => void deps.refetch()} />;
  const { environment: e, promotions, moves } = env.data;
  const pointer = e.pointer;
  const deployByPromotion = new Map(deps.data.deployments.map((d) => [d.promotion_id, d]));
  // Rollback targets: digests this environment ran before, other than the current one.
  const previous = [
    ...new Map(moves.filter((m) => m.toDigest !== pointer?.digest).map((m) => [m.toDigest, m])).values(),
  ];
  return (
    <div className="space-y-6">
      <div>
        <h1 className="text-xl font-semibold tracking-tight">
          {e.name} <span className="text-base font-normal text-zinc-500">{e.repo}</span>
        </h1>
        <p className="text-sm text-zinc-600 dark:text-zinc-400">
          {e.production ? "Production: fails closed. " : `Fails ${e.failMode}. `}Policy version {e.policyVersion}
          {e.after ? `, after ${e.after}` : ""}.
        </p>
      </div>
      <Card title="Current artifact" id="current-artifact">
        {pointer === null ? (
          <EmptyState title="Nothing promoted yet">Promote an artifact to this environment to see it here.</EmptyState>
        ) : (
          <dl
            className="grid grid-cols-[max-content_1fr] gap-x-4 gap-y-1 text-sm"
            data-testid="current-digest"
            data-digest={pointer.digest}
          >
            <dt className="text-zinc-500">Digest</dt>
            <dd>
              <code className="font-mono text-xs break-all">sha256:{pointer.digest}</code>
            </dd>
            <dt className="text-zinc-500">Provenance</dt>
            <dd>
              {pointer.attestationId ? (
                <Link
                  className="text-blue-700 hover:underline dark:text-blue-400"
                  href={`/orgs/${org}/provenance/${pointer.attestationId}`}
                >
                  attestation record
                </Link>
              ) : (
                <span className="text-zinc-500">none recorded</span>
              )}
            </dd>
            <dt className="text-zinc-500">Moved</dt>
            <dd>
              <RelativeTime iso={pointer.movedAt} now={now} />
            </dd>
          </dl>
        )}
      </Card>
      <DeploymentLockCard
        org={org}
        environmentId={environmentId}
        lock={deps.data.lock}
        isAdmin={role === "admin"}
        now={now}
      />
      {canOperate(role) ? <RequestPromotionCard org={org} environmentId={environmentId} /> : null}
      <PolicyCard org={org} environmentId={environmentId} policy={env.data.policy} isAdmin={role === "admin"} />
      {role === "admin" ? <DeployConfigCard org={org} environmentId={environmentId} /> : null}
      {canOperate(role) && previous.length > 0 ? (
        <RollbackCard org={org} environmentId={environmentId} targets={previous} />
      ) : null}
      <Card title="Deployment history" id="history">
        {promotions.length === 0 ? (
          <EmptyState title="No promotions yet" />
        ) : (
          <ol className="space-y-3" data-testid="history">
            {promotions.map((p) => {
              const d = deployByPromotion.get(p.id);
              return (
                <li
                  key={p.id}
                  className="border-t border-zinc-100 pt-2 first:border-0 first:pt-0 dark:border-zinc-800"
                  data-promotion={p.id}
                >
                  <p className="text-sm">
                    <strong>{p.kind === "rollback" ? "Rollback" : "Promotion"}</strong> of{" "}
                    <code className="font-mono text-xs">sha256:{p.artifact.digest.slice(0, 12)}…</code> by{" "}
                    {p.requester.login ?? p.requester.actor} <RelativeTime iso={p.createdAt} now={now} />:{" "}
                    <span data-testid="verdict">{p.decision.verdict}</span>, {p.state.replace("_", " ")}
                    {d ? (
                      <>
                        {" · deploy "}
                        <span data-testid="deploy-state">{d.state}</span>
                        {d.run_id ? (
                          <>
                            {" "}
                            <Link
                              className="font-mono text-blue-700 hover:underline dark:text-blue-400"
                              href={`/orgs/${org}/runs/${d.run_id}`}
                            >
                              {d.run_id.slice(0, 8)}
                            </Link>
                          </>
                        ) : null}
                      </>
                    ) : null}
                  </p>
                  <GateReasons reasons={p.decision.reasons} />
                </li>
              );
            })}
          </ol>
        )}
      </Card>
    </div>
  );
}

function RollbackCard({
  org,
  environmentId,
  targets,
}: {
  org: string;
  environmentId: string;
  targets: { toArtifactId: string; toDigest: string; at: string }[];
}) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const [reason, setReason] = useState("");
  const [target, setTarget] = useState(targets[0]?.toArtifactId ?? "");
  const [message, setMessage] = useState<{ error: boolean; text: string } | null>(null);
  const rollback = useMutation(
    trpc.environments.rollback.mutationOptions({
      onMutate: () => setMessage(null),
      onSuccess: async (r) => {
        await queryClient.invalidateQueries({ queryKey: trpc.environments.get.queryKey({ org, environmentId }) });
        setMessage({ error: false, text: `Rollback ${r.state === "pending" ? "is waiting for approval" : r.state}.` });
      },
      onError: (e) => setMessage({ error: true, text: e.message }),
    }),
  );
  return (
    <Card title="Roll back" id="rollback">
      <form
        className="flex flex-wrap items-end gap-2"
        onSubmit={(e) => {
          e.preventDefault();
          rollback.mutate({ org, environmentId, toArtifactId: target, reason });
        }}
      >
        <label className="flex flex-col gap-1 text-xs font-medium">
          To the digest
          <select
            name="target"
            value={target}
            onChange={(e) => setTarget(e.target.value)}
            className="h-9 rounded-md border border-zinc-300 bg-white px-2 text-sm dark:border-zinc-700 dark:bg-zinc-950"
          >
            {targets.map((t) => (
              <option key={t.toArtifactId} value={t.toArtifactId}>
                sha256:{t.toDigest.slice(0, 12)}…
              </option>
            ))}
          </select>
        </label>
        <label className="flex min-w-64 flex-1 flex-col gap-1 text-xs font-medium">
          Reason
          <input
            name="reason"
            required
            maxLength={2000}
            value={reason}
            onChange={(e) => setReason(e.target.value)}
            className="h-9 rounded-md border border-zinc-300 bg-white px-2 text-sm dark:border-zinc-700 dark:bg-zinc-950"
          />
        </label>
        <Button type="submit" variant="danger" disabled={rollback.isPending || reason.trim() === "" || target === ""}>
          {rollback.isPending ? "Rolling back…" : "Roll back"}
        </Button>
      </form>
      {message ? (
        <p
          role={message.error ? "alert" : "status"}
          className={message.error ? "mt-2 text-sm text-red-700" : "mt-2 text-sm text-emerald-700"}
        >
          {message.text}
        </p>
      ) : null}
    </Card>
  );
}
