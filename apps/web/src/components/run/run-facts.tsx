import { EmptyState, formatBytes, shortSha } from "@kiln/ui";
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
      <dd className="break-all font-mono text-xs" title={r.commit_sha}>{r.commit_sha}</dd>
      <dt className="text-zinc-500 dark:text-zinc-400">Workflow</dt>
      <dd className="font-mono text-xs">{r.workflow_path}</dd>
      <dt className="text-zinc-500 dark:text-zinc-400">Workflow hash</dt>
      <dd className="break-all font-mono text-xs">{r.workflow_hash ?? "— (the definition never froze)"}</dd>
      <dt className="text-zinc-500 dark:text-zinc-400">Trust class</dt>
      <dd><span className="font-medium">{r.trust_class}</span> <span className="text-zinc-500 dark:text-zinc-400">— {TRUST[r.trust_class] ?? ""}</span></dd>
    </dl>
  );
}

export function ArtifactsList({ data }: { data: RunPageData }) {
  if (data.artifacts.length === 0) return <EmptyState title="No artifacts">This run published none.</EmptyState>;
  const jobName = new Map(data.run.jobs.map((j) => [j.id, j.name]));
  return (
    <table className="w-full text-left text-sm" data-testid="artifacts">
      <thead className="text-xs uppercase tracking-wide text-zinc-500 dark:text-zinc-400">
        <tr>
          <th scope="col" className="py-1.5 pr-4 font-medium">Name</th>
          <th scope="col" className="py-1.5 pr-4 font-medium">Job</th>
          <th scope="col" className="py-1.5 pr-4 font-medium">Size</th>
          <th scope="col" className="py-1.5 font-medium">SHA-256</th>
        </tr>
      </thead>
      <tbody className="divide-y divide-zinc-100 dark:divide-zinc-800">
        {data.artifacts.map((a) => (
          <tr key={`${a.job_id}/${a.name}`}>
            <td className="py-1.5 pr-4 font-medium">{a.name}{a.state !== "sealed" ? <span className="ml-1 text-xs text-amber-700">({a.state})</span> : null}</td>
            <td className="py-1.5 pr-4">{jobName.get(a.job_id) ?? "—"}</td>
            <td className="py-1.5 pr-4 tabular-nums">{formatBytes(a.size_bytes)}</td>
            <td className="py-1.5 font-mono text-xs" title={a.sha256 ?? undefined}>{a.sha256 ? shortSha(a.sha256) : "—"}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
