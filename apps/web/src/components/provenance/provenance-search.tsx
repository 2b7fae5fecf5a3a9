"use client";
import { Button, Card, EmptyState, inputClasses, LoadingBlock, shortSha } from "@kiln/ui";
import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { usePathname, useRouter, useSearchParams } from "next/navigation";
import { useState } from "react";
import { useTRPC } from "@/trpc/client.tsx";
import { QueryError } from "../query-error.tsx";
import { RelativeTime, useNow } from "../time.tsx";
import { AttestationBadge } from "./attestation-badge.tsx";

type By = "digest" | "commit" | "run";
const BY: { value: By; label: string; placeholder: string }[] = [
  { value: "digest", label: "Artifact digest", placeholder: "sha256:…" },
  { value: "commit", label: "Commit", placeholder: "7 to 40 hex digits" },
  { value: "run", label: "Run id", placeholder: "run UUID" },
];

/** Provenance search (issue 17): the URL holds the query, so a result is a link an auditor can share. */
export function ProvenanceSearch({ org }: { org: string }) {
  const trpc = useTRPC();
  const router = useRouter();
  const pathname = usePathname();
  const sp = useSearchParams();
  const by = (BY.find((b) => b.value === sp.get("by"))?.value ?? "digest") as By;
  const q = sp.get("q") ?? "";
  const [draftBy, setDraftBy] = useState<By>(by);
  const [draft, setDraft] = useState(q);
  const now = useNow(10_000);
  const res = useQuery({ ...trpc.provenance.search.queryOptions({ org, by, q }), enabled: q.length > 0 });
  return (
    <div className="space-y-4">
      <h1 className="text-xl font-semibold tracking-tight">Provenance</h1>
      <form
        role="search"
        aria-label="Provenance search"
        className="flex flex-wrap items-end gap-2"
        onSubmit={(e) => {
          e.preventDefault();
          const next = new URLSearchParams({ by: draftBy, q: draft.trim() });
          router.replace(`${pathname}?${next}`);
        }}
      >
        <label className="flex flex-col gap-1 text-xs font-medium text-zinc-700 dark:text-zinc-300">
          Search by
          <select
            className={`${inputClasses} w-44`}
            value={draftBy}
            onChange={(e) => setDraftBy(e.target.value as By)}
            name="by"
          >
            {BY.map((b) => (
              <option key={b.value} value={b.value}>
                {b.label}
              </option>
            ))}
          </select>
        </label>
        <label className="flex min-w-72 flex-1 flex-col gap-1 text-xs font-medium text-zinc-700 dark:text-zinc-300">
          Value
          <input
            className={`${inputClasses} font-mono`}
            name="q"
            value={draft}
            placeholder={BY.find((b) => b.value === draftBy)?.placeholder}
            onChange={(e) => setDraft(e.target.value)}
          />
        </label>
        <Button type="submit" variant="primary" disabled={draft.trim() === ""}>
          Search
        </Button>
      </form>
      <Card>
        {q === "" ? (
          <EmptyState title="Search provenance">
            Find the signed statement for an artifact by its digest, every statement for a commit, or those of one run.
          </EmptyState>
        ) : res.isPending ? (
          <LoadingBlock label="Searching provenance" rows={4} />
        ) : res.isError ? (
          <QueryError error={res.error} what="Provenance" onRetry={() => void res.refetch()} />
        ) : res.data.length === 0 ? (
          <EmptyState title="No attestations">
            Nothing in this org matches {by === "digest" ? "that digest" : by === "commit" ? "that commit" : "that run"}
            .
          </EmptyState>
        ) : (
          <ul className="divide-y divide-zinc-100 dark:divide-zinc-800" data-testid="provenance-results">
            {res.data.map((a) => (
              <li key={a.id} className="flex flex-wrap items-center gap-x-4 gap-y-1 py-2 text-sm">
                <Link
                  href={`/orgs/${org}/provenance/${a.id}`}
                  className="font-medium text-blue-700 underline-offset-2 hover:underline focus-visible:outline-2 focus-visible:outline-blue-600 dark:text-blue-300"
                >
                  {a.job_name} · attempt {a.epoch}
                </Link>
                <span className="font-mono text-xs" title={a.commit_sha}>
                  {shortSha(a.commit_sha)}
                </span>
                <span className="text-xs text-zinc-500 dark:text-zinc-400">log #{a.tlog_index}</span>
                <span className="flex flex-wrap gap-2">
                  {a.subjects.map((s) => (
                    <span key={s.artifact_id} className="font-mono text-xs" title={s.sha256}>
                      {s.name} {shortSha(s.sha256)}{" "}
                      <AttestationBadge
                        state={s.quarantined ? "quarantined" : a.state === "mismatch" ? "quarantined" : a.state}
                      />
                    </span>
                  ))}
                </span>
                <span className="ml-auto text-xs text-zinc-500 dark:text-zinc-400">
                  <RelativeTime iso={a.created_at} now={now} />
                </span>
              </li>
            ))}
          </ul>
        )}
      </Card>
    </div>
  );
}
