"use client";
import { Card, EmptyState, LoadingBlock, Stat } from "@kiln/ui";
import { useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { useTRPC } from "@/trpc/client.tsx";
import { QueryError } from "../query-error.tsx";
import { RelativeTime, useNow } from "../time.tsx";

/**
 * The transparency log (issue 17, docs/adr/0026): size, root and time of the latest signed
 * checkpoint, and the verifier key an auditor pins. Polled every 5 s: checkpoints follow new
 * entries within seconds, so the page stays live without a stream.
 */
export function TlogStatusCard() {
  const trpc = useTRPC();
  const q = useQuery({ ...trpc.tlog.status.queryOptions(), refetchInterval: 5_000 });
  const now = useNow(5_000);
  const [copied, setCopied] = useState(false);
  if (q.isPending) return <LoadingBlock label="Loading the transparency log" rows={3} />;
  if (q.isError) return <QueryError error={q.error} what="Transparency log" onRetry={() => void q.refetch()} />;
  const { checkpoint, verifierKey, entries } = q.data;
  if (!checkpoint || !verifierKey)
    return (
      <EmptyState title="No checkpoint signed yet">
        The workers sign the log&apos;s first checkpoint (and create its key) within a second of starting.
      </EmptyState>
    );
  const pending = entries - checkpoint.size;
  return (
    <div className="space-y-4" data-testid="tlog-status">
      <div className="grid gap-4 sm:grid-cols-3">
        <Stat
          label="Tree size"
          value={<span data-testid="tlog-size">{checkpoint.size}</span>}
          hint={pending > 0 ? `${pending} entries awaiting the next checkpoint` : "every entry is checkpointed"}
        />
        <Stat
          label="Last checkpoint"
          value={<RelativeTime iso={checkpoint.signedAt} now={now} />}
          hint="signed with Ed25519 (C2SP signed note)"
        />
        <Stat label="Entries" value={entries} hint="append-only; never edited or deleted" />
      </div>
      <Card title="Root hash" id="tlog-root">
        <code className="block break-all font-mono text-sm" data-testid="tlog-root">
          {checkpoint.rootHash}
        </code>
      </Card>
      <Card
        title="Verifier key"
        id="tlog-key"
        actions={
          <button
            type="button"
            className="rounded px-2 py-1 text-xs font-medium text-blue-700 hover:bg-blue-50 focus-visible:outline-2 focus-visible:outline-blue-600 dark:text-blue-300 dark:hover:bg-zinc-800"
            onClick={() => {
              void navigator.clipboard?.writeText(verifierKey).then(() => setCopied(true));
            }}
          >
            {copied ? "Copied" : "Copy"}
          </button>
        }
      >
        <code className="block break-all font-mono text-sm" data-testid="tlog-verifier-key">
          {verifierKey}
        </code>
        <p className="mt-2 text-xs text-zinc-500 dark:text-zinc-400">
          Pin this key, then follow the log with <code>npm run kiln -- tlog monitor --state &lt;file&gt;</code> or any
          C2SP tlog-tiles client: <code>/tlog/checkpoint</code>, <code>/tlog/tile/…</code>,{" "}
          <code>/v1/tlog/proofs/inclusion</code>, <code>/v1/tlog/proofs/consistency</code>.
        </p>
      </Card>
      <Card title="Latest checkpoint" id="tlog-note">
        <pre className="overflow-x-auto whitespace-pre font-mono text-xs" data-testid="tlog-note">
          {checkpoint.note}
        </pre>
      </Card>
    </div>
  );
}
