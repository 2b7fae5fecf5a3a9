import { EmptyState, formatBytes, shortSha } from "@kiln/ui";
import Link from "next/link";
import { AttestationBadge } from "../provenance/attestation-badge.tsx";
import { ArtifactHold } from "./artifact-hold.tsx";
import type { RunPageData } from "../types.ts";

const TRUST: Record<string, string> = {
  trusted: "decided at admission from the trigger and org membership; may use secrets and write caches",
  untrusted: "fork, non-member or downgraded at admission; no secrets, read-only caches",
};

/** The frozen definition: exactly what ran and under which posture (ADR 0005). */
export function DefinitionFacts({ data }: { data: RunPageData }) {
  const r = data.run;
  return (
    <dl className="grid grid-cols-[max-content_1fr] gap-x-4 gap-y-1.5 text-sm" data-testid="definition">
      <dt className="text-zinc-500 dark:text-zinc-400">Commit</dt>
      <dd className="break-all font-mono text-xs" title={r.commit_sha}>
        {r.commit_sha}
      </dd>
      <dt className="text-zinc-500 dark:text-zinc-400">Workflow</dt>
      <dd className="font-mono text-xs">{r.workflow_path}</dd>
      <dt className="text-zinc-500 dark:text-zinc-400">Workflow hash</dt>
      <dd className="break-all font-mono text-xs">{r.workflow_hash ?? "— (the definition never froze)"}</dd>
      <dt className="text-zinc-500 dark:text-zinc-400">Trust class</dt>
      <dd>
        <span className="font-medium">{r.trust_class}</span>{" "}
        <span className="text-zinc-500 dark:text-zinc-400">— {TRUST[r.trust_class] ?? ""}</span>
      </dd>
    </dl>
  );
}

export function ArtifactsList({ data, org }: { data: RunPageData; org: string }) {
  if (data.artifacts.length === 0) return <EmptyState title="No artifacts">This run published none.</EmptyState>;
  const jobName = new Map(data.run.jobs.map((j) => [j.id, j.name]));
  return (
    <table className="w-full text-left text-sm" data-testid="artifacts">
      <thead className="text-xs uppercase tracking-wide text-zinc-500 dark:text-zinc-400">
        <tr>
          <th scope="col" className="py-1.5 pr-4 font-medium">
            Name
          </th>
          <th scope="col" className="py-1.5 pr-4 font-medium">
            Job
          </th>
          <th scope="col" className="py-1.5 pr-4 font-medium">
            Size
          </th>
          <th scope="col" className="py-1.5 pr-4 font-medium">
            SHA-256
          </th>
          <th scope="col" className="py-1.5 pr-4 font-medium">
            Provenance
          </th>
          <th scope="col" className="py-1.5 pr-4 font-medium">
            Retention
          </th>
          <th scope="col" className="py-1.5 font-medium">
            <span className="sr-only">Download</span>
          </th>
        </tr>
      </thead>
      <tbody className="divide-y divide-zinc-100 dark:divide-zinc-800">
        {data.artifacts.map((a) => (
          <tr key={`${a.job_id}/${a.name}`}>
            <td className="py-1.5 pr-4 font-medium">
              {a.name}
              {a.state !== "sealed" ? <span className="ml-1 text-xs text-amber-700">({a.state})</span> : null}
            </td>
            <td className="py-1.5 pr-4">
              {jobName.get(a.job_id) ?? "—"}
              {a.reused_from_run_id ? (
                <span className="ml-1 text-xs text-zinc-500 dark:text-zinc-400" data-testid="artifact-reused">
                  (reused from run <span className="font-mono">{a.reused_from_run_id.slice(0, 8)}</span>)
                </span>
              ) : null}
            </td>
            <td className="py-1.5 pr-4 tabular-nums">{formatBytes(a.size_bytes)}</td>
            <td className="py-1.5 pr-4 font-mono text-xs" title={a.sha256 ?? undefined}>
              {a.sha256 ? shortSha(a.sha256) : "—"}
            </td>
            <td className="py-1.5 pr-4">
              <AttestationBadge state={a.attestation_state} />
              {a.attestation_id ? (
                <Link
                  className="ml-2 text-xs text-blue-700 underline-offset-2 hover:underline dark:text-blue-300"
                  href={`/orgs/${org}/provenance/${a.attestation_id}`}
                  aria-label={`Provenance record of ${a.name}`}
                >
                  record
                </Link>
              ) : null}
              {a.quarantine_reason ? <span className="ml-2 text-xs text-red-700">{a.quarantine_reason}</span> : null}
            </td>
            <td className="py-1.5 pr-4 text-xs" data-testid="artifact-retention">
              <RetentionFacts cls={a.retention_class} expiresAt={a.expires_at} expiredAt={a.expired_at} held={a.held} />
              {a.state === "sealed" ? (
                <ArtifactHold
                  runId={data.run.id}
                  artifactId={a.id}
                  name={a.name}
                  held={a.held}
                  expired={a.expired_at !== null}
                />
              ) : null}
            </td>
            <td className="py-1.5 text-right">
              {/* The API's own download (authorised per request, 302 to a presigned URL): a plain link,
                  so the browser follows the redirect and saves the file; no bytes pass through Kiln. */}
              {a.state === "sealed" && !a.expired_at ? (
                <a
                  href={`/v1/artifacts/${a.id}/download`}
                  className="rounded text-blue-700 underline-offset-2 hover:underline focus-visible:outline-2 focus-visible:outline-blue-600 dark:text-blue-400"
                  aria-label={`Download ${a.name} (${jobName.get(a.job_id) ?? "job"})`}
                  data-testid="artifact-download"
                >
                  Download
                </a>
              ) : null}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

const ms = (v: number | null) => (v === null ? "—" : v < 1000 ? `${v} ms` : `${(v / 1000).toFixed(1)} s`);

/** Build caches (issue 8): what each job restored and saved, and the org's hit rate by trust class. */
export function CachesList({ data }: { data: RunPageData }) {
  if (data.caches.length === 0 && data.cache_org.length === 0)
    return <EmptyState title="No caches">No job of this run declared a cache.</EmptyState>;
  const jobName = new Map(data.run.jobs.map((j) => [j.id, j.name]));
  return (
    <div className="space-y-3">
      <table className="w-full text-left text-sm" data-testid="caches">
        <thead className="text-xs uppercase tracking-wide text-zinc-500 dark:text-zinc-400">
          <tr>
            <th scope="col" className="py-1.5 pr-4 font-medium">
              Job
            </th>
            <th scope="col" className="py-1.5 pr-4 font-medium">
              Restore
            </th>
            <th scope="col" className="py-1.5 pr-4 font-medium">
              Bytes restored
            </th>
            <th scope="col" className="py-1.5 pr-4 font-medium">
              Restore time
            </th>
            <th scope="col" className="py-1.5 pr-4 font-medium">
              Save
            </th>
            <th scope="col" className="py-1.5 font-medium">
              Save time
            </th>
          </tr>
        </thead>
        <tbody className="divide-y divide-zinc-100 dark:divide-zinc-800">
          {data.caches.map((c) => (
            <tr key={c.jobId}>
              <td className="py-1.5 pr-4 font-medium">{jobName.get(c.jobId) ?? "—"}</td>
              <td className="py-1.5 pr-4" title={c.restoreReason ?? undefined}>
                {c.restoreResult === "hit"
                  ? `hit (${c.restoreTier === "local" ? "node-local" : "object storage"}${c.restoreExact === false ? ", prefix" : ""})`
                  : (c.restoreResult ?? "—")}
              </td>
              <td className="py-1.5 pr-4 tabular-nums">{formatBytes(c.bytesRestored)}</td>
              <td className="py-1.5 pr-4 tabular-nums">{ms(c.restoreMs)}</td>
              <td className="py-1.5 pr-4" title={c.saveReason ?? undefined}>
                {c.saveResult === "refused" ? (c.saveReason ?? "refused") : (c.saveResult ?? "—")}
              </td>
              <td className="py-1.5 tabular-nums">{ms(c.saveMs)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {data.cache_org.length > 0 ? (
        <p className="text-xs text-zinc-500 dark:text-zinc-400" data-testid="cache-org">
          Org, last 30 days:{" "}
          {data.cache_org
            .map(
              (o) =>
                `${o.trustClass} ${o.hitRate === null ? "—" : `${Math.round(o.hitRate * 100)}%`} hit rate (${o.hits}/${o.restores}), ~${ms(o.estimatedSavedMs)} saved`,
            )
            .join("; ")}
        </p>
      ) : null}
    </div>
  );
}

const CLASS_LABEL: Record<string, string> = {
  release: "release",
  default_branch: "default branch",
  other: "branch / PR",
};

/** Retention (issue 21): the class written at seal time and when it expires, or that it has. */
export function RetentionFacts(p: {
  cls: string | null;
  expiresAt: string | null;
  expiredAt: string | null;
  held?: boolean;
}) {
  if (!p.cls) return <span className="text-zinc-500 dark:text-zinc-400">unclassified (kept)</span>;
  const day = (iso: string) => iso.slice(0, 10);
  return (
    <span>
      <span className="rounded bg-zinc-100 px-1.5 py-0.5 font-medium dark:bg-zinc-800">
        {CLASS_LABEL[p.cls] ?? p.cls}
      </span>{" "}
      {p.expiredAt ? (
        <span className="text-red-700 dark:text-red-400">expired {day(p.expiredAt)}</span>
      ) : p.expiresAt ? (
        <time dateTime={p.expiresAt} title={p.expiresAt}>
          expires {day(p.expiresAt)}
        </time>
      ) : null}
      {p.held ? <span className="ml-1 text-amber-700 dark:text-amber-400">· held</span> : null}
    </span>
  );
}
