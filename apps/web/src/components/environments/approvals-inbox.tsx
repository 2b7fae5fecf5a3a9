"use client";
import { Button, Card, EmptyState, LoadingBlock } from "@kiln/ui";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import Link from "next/link";
import { useState } from "react";
import { useTRPC } from "@/trpc/client.tsx";
import { canOperate, useOrg } from "../org-context.tsx";
import { QueryError } from "../query-error.tsx";
import { RelativeTime, useNow } from "../time.tsx";
import { GateReasons } from "./gate-reasons.tsx";
import { OverrideForm } from "./override-form.tsx";

/**
 * The approvals inbox (issue 18): the org's pending promotions, oldest first, with the reason each
 * gate gave, approved or rejected with a comment. Refreshed every 3 s, so a promotion another
 * member approved leaves the list without a reload. The server enforces who may approve (separation
 * of duties); its refusal is shown next to the promotion.
 */
export function ApprovalsInbox({ org }: { org: string }) {
  const trpc = useTRPC();
  const { role } = useOrg();
  const q = useQuery({ ...trpc.promotions.inbox.queryOptions({ org }), refetchInterval: 3_000 });
  const now = useNow(10_000);
  if (q.isPending) return <LoadingBlock label="Loading pending promotions" rows={3} />;
  if (q.isError) return <QueryError error={q.error} what="Approvals" onRetry={() => void q.refetch()} />;
  return (
    <div className="space-y-6">
      <div>
        <h1 className="text-xl font-semibold tracking-tight">Approvals</h1>
        <p className="text-sm text-zinc-600 dark:text-zinc-400">
          Promotions waiting for an approval or an override. The gates are evaluated by Kiln, outside the pipeline; the
          requester of a promotion cannot approve it.
        </p>
      </div>
      {q.data.length === 0 ? (
        <EmptyState title="Nothing waiting for approval">
          Promotions that need an approval appear here as soon as they are requested.
        </EmptyState>
      ) : (
        <ul className="space-y-4" data-testid="approvals-inbox">
          {q.data.map((p) => (
            <li key={p.id} data-promotion={p.id}>
              <PendingPromotion org={org} p={p} now={now} canReview={canOperate(role)} isAdmin={role === "admin"} />
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

interface Pending {
  id: string;
  environmentId: string;
  environment: string;
  repo: string;
  production: boolean;
  kind: string;
  reason: string;
  createdAt: string;
  requester: { login: string | null; actor: string };
  artifact: { name: string; digest: string; runId: string; attestationId: string | null };
  decision: { verdict: string; reasons: { gate: string; status: string; code: string; message: string }[] };
  approvals: { login: string; decision: string; comment: string | null; at: string }[];
}

function PendingPromotion({
  org,
  p,
  now,
  canReview,
  isAdmin,
}: {
  org: string;
  p: Pending;
  now: number;
  canReview: boolean;
  isAdmin: boolean;
}) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const [comment, setComment] = useState("");
  const [error, setError] = useState<string | null>(null);
  const review = useMutation(
    trpc.promotions.review.mutationOptions({
      onMutate: () => setError(null),
      onSuccess: () => queryClient.invalidateQueries({ queryKey: trpc.promotions.inbox.queryKey({ org }) }),
      onError: (e) => setError(e.message),
    }),
  );
  const titleId = `promotion-${p.id}-title`;
  return (
    <Card
      id={`promotion-${p.id}`}
      title={
        <span id={titleId}>
          {p.kind === "rollback" ? "Roll back" : "Promote"} <code className="font-mono">{p.artifact.name}</code> to{" "}
          <Link
            className="text-blue-700 hover:underline dark:text-blue-400"
            href={`/orgs/${org}/environments/${p.environmentId}`}
          >
            {p.environment}
          </Link>{" "}
          <span className="font-normal text-zinc-500">({p.repo})</span>
        </span>
      }
    >
      <div className="space-y-3">
        <p className="text-sm">
          <code className="font-mono text-xs">sha256:{p.artifact.digest.slice(0, 16)}…</code> from run{" "}
          <Link
            className="font-mono text-blue-700 hover:underline dark:text-blue-400"
            href={`/orgs/${org}/runs/${p.artifact.runId}`}
          >
            {p.artifact.runId.slice(0, 8)}
          </Link>
          {p.artifact.attestationId ? (
            <>
              {" · "}
              <Link
                className="text-blue-700 hover:underline dark:text-blue-400"
                href={`/orgs/${org}/provenance/${p.artifact.attestationId}`}
              >
                provenance
              </Link>
            </>
          ) : null}
        </p>
        <p className="text-sm text-zinc-700 dark:text-zinc-300">
          Requested by <strong>{p.requester.login ?? p.requester.actor}</strong>{" "}
          <RelativeTime iso={p.createdAt} now={now} />: {p.reason}
        </p>
        <GateReasons reasons={p.decision.reasons} />
        {p.approvals.length > 0 ? (
          <ul className="text-sm text-zinc-600 dark:text-zinc-400" aria-label="Approvals so far">
            {p.approvals.map((a) => (
              <li key={`${a.login}:${a.at}`}>
                {a.login} {a.decision === "approve" ? "approved" : "rejected"}
                {a.comment ? `: ${a.comment}` : ""}
              </li>
            ))}
          </ul>
        ) : null}
        {canReview ? (
          <form
            className="space-y-2"
            aria-labelledby={titleId}
            onSubmit={(e) => {
              e.preventDefault();
              const decision =
                (e.nativeEvent as SubmitEvent).submitter?.getAttribute("value") === "reject" ? "reject" : "approve";
              review.mutate({ org, promotionId: p.id, decision, comment: comment.trim() || undefined });
            }}
          >
            <label className="block text-xs font-medium text-zinc-700 dark:text-zinc-300" htmlFor={`comment-${p.id}`}>
              Comment
            </label>
            <textarea
              id={`comment-${p.id}`}
              name="comment"
              maxLength={2000}
              rows={2}
              value={comment}
              onChange={(e) => setComment(e.target.value)}
              className="w-full rounded-md border border-zinc-300 bg-white p-2 text-sm dark:border-zinc-700 dark:bg-zinc-950"
            />
            <div className="flex gap-2">
              <Button type="submit" variant="primary" value="approve" disabled={review.isPending}>
                {review.isPending && review.variables?.decision === "approve" ? "Approving…" : "Approve"}
              </Button>
              <Button type="submit" variant="danger" value="reject" disabled={review.isPending}>
                {review.isPending && review.variables?.decision === "reject" ? "Rejecting…" : "Reject"}
              </Button>
            </div>
            {error ? (
              <p role="alert" className="text-sm text-red-700 dark:text-red-400">
                {error}
              </p>
            ) : null}
          </form>
        ) : null}
        {isAdmin ? <OverrideForm org={org} promotionId={p.id} /> : null}
      </div>
    </Card>
  );
}
