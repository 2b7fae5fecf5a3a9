"use client";
import { buttonClasses, Card, LoadingBlock, shortSha } from "@kiln/ui";
import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { useMemo } from "react";
import { useTRPC } from "@/trpc/client.tsx";
import { QueryError } from "../query-error.tsx";
import { AttestationBadge, Check } from "./attestation-badge.tsx";
import { RunHistory } from "./run-history.tsx";

/**
 * One provenance record (issue 17). Every check is run by the server at read time with the
 * published key and the latest signed checkpoint; the page polls while the verifier or the next
 * checkpoint is still to come, then stops.
 */
export function ProvenanceRecordView({ org, attestationId }: { org: string; attestationId: string }) {
  const trpc = useTRPC();
  const q = useQuery({
    ...trpc.provenance.record.queryOptions({ org, attestationId }),
    refetchInterval: (query) => {
      const d = query.state.data;
      return d && d.summary.state !== "logged" && d.log.inclusion_verified ? false : 3_000;
    },
  });
  const bundleHref = useMemo(
    () =>
      q.data
        ? `data:application/json;charset=utf-8,${encodeURIComponent(JSON.stringify(q.data.bundle, null, 2))}`
        : "#",
    [q.data],
  );
  if (q.isPending) return <LoadingBlock label="Loading provenance record" rows={8} />;
  if (q.isError) return <QueryError error={q.error} what="Provenance record" onRetry={() => void q.refetch()} />;
  const d = q.data;
  const s = d.summary;
  const quarantined = s.state === "mismatch" || s.subjects.some((x) => x.quarantined);
  return (
    <div className="space-y-6">
      <div className="flex flex-wrap items-center gap-3">
        <h1 className="text-xl font-semibold tracking-tight">
          Provenance · {s.job_name} · attempt {s.epoch}
        </h1>
        <AttestationBadge state={quarantined ? "quarantined" : s.state} />
        <a
          className={buttonClasses("secondary", "sm")}
          href={bundleHref}
          download={`kiln-attestation-${s.id}.json`}
          data-testid="download-bundle"
        >
          Download bundle
        </a>
      </div>
      <p className="text-sm text-zinc-600 dark:text-zinc-400">
        Run{" "}
        <Link
          className="font-mono text-blue-700 hover:underline dark:text-blue-300"
          href={`/orgs/${org}/runs/${s.run_id}`}
        >
          {s.run_id.slice(0, 8)}
        </Link>{" "}
        at commit <span className="font-mono">{shortSha(s.commit_sha)}</span>. Verify offline with{" "}
        <code className="text-xs">
          npm run kiln -- verify &lt;file&gt; --bundle &lt;bundle.json&gt; --keys … --log-key …
        </code>
      </p>
      <Card title="Verification (server-side, now)" id="verification">
        <ul className="space-y-1.5">
          <Check ok={d.signature.verified} testId="check-signature">
            DSSE signature with key <span className="font-mono text-xs">{d.signature.key_id.slice(0, 16)}…</span>
            {d.signature.failed_rule ? ` — failed: ${d.signature.failed_rule}` : ""}
          </Check>
          <Check ok={d.log.leaf_matches} testId="check-leaf">
            Log entry #{d.log.index} holds exactly this envelope
          </Check>
          <Check ok={d.log.checkpoint_verified} testId="check-checkpoint">
            {d.log.tree_size
              ? `Latest checkpoint (tree of ${d.log.tree_size}) signed by the log key`
              : "No signed checkpoint covers the entry yet"}
          </Check>
          <Check ok={d.log.inclusion_verified} testId="check-inclusion">
            Inclusion proof of entry #{d.log.index} against that checkpoint
          </Check>
          <Check ok={!quarantined} testId="check-bytes">
            {s.state === "logged"
              ? "Stored bytes: the verifier has not re-read them yet"
              : quarantined
                ? "Stored bytes do NOT match: quarantined"
                : "Stored bytes match the signed digests"}
          </Check>
        </ul>
      </Card>
      <Card title="Subjects" id="subjects">
        <table className="w-full text-left text-sm">
          <thead className="text-xs uppercase tracking-wide text-zinc-500 dark:text-zinc-400">
            <tr>
              <th scope="col" className="py-1.5 pr-4 font-medium">
                Name
              </th>
              <th scope="col" className="py-1.5 pr-4 font-medium">
                SHA-256
              </th>
              <th scope="col" className="py-1.5 font-medium">
                State
              </th>
            </tr>
          </thead>
          <tbody className="divide-y divide-zinc-100 dark:divide-zinc-800">
            {s.subjects.map((x) => (
              <tr key={x.artifact_id}>
                <td className="py-1.5 pr-4 font-medium">{x.name}</td>
                <td className="break-all py-1.5 pr-4 font-mono text-xs">{x.sha256}</td>
                <td className="py-1.5">
                  <AttestationBadge
                    state={x.quarantined ? "quarantined" : s.state === "mismatch" ? "quarantined" : s.state}
                  />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </Card>
      <Card title="Statement (decoded)" id="statement">
        <pre
          className="max-h-[32rem] overflow-auto rounded bg-zinc-50 p-3 text-xs dark:bg-zinc-950"
          data-testid="statement"
          tabIndex={0}
        >
          {JSON.stringify(d.statement, null, 2)}
        </pre>
      </Card>
      <Card title="Run history" id="history">
        <RunHistory org={org} runId={s.run_id} />
      </Card>
    </div>
  );
}
