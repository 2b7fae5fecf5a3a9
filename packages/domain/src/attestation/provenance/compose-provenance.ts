// Composes the SLSA v1 statement for one successful job from control-plane records only (issue 17):
// never from anything the job said about itself. The caller loads the records; this is pure.
import { SLSA_PROVENANCE_V1, STATEMENT_TYPE_V1, type ResourceDescriptor, type StatementV1 } from "./in-toto.ts";

/** Kiln's buildType, documented in docs/attestation.md (what each parameter means). */
export const KILN_BUILD_TYPE = "https://kiln.dev/attestation/buildtypes/workflow/v1";

export interface ProvenanceInput {
  /** The Kiln instance's base URI (its public URL): names the builder and the invocation. */
  instanceUri: string;
  org: { id: string; slug: string };
  repo: { fullName: string; cloneUrl: string };
  run: {
    id: string;
    ref: string | null;
    commitSha: string;
    workflowPath: string;
    workflowSha256: string | null;
    /**
     * Hex SHA-256 of the canonical JSON of the run's inputs as admitted ({} when none). Manual-run
     * inputs can be anything a member typed; the statement names only their digest (issue 28).
     */
    inputsSha256: string;
    trustClass: string;
  };
  job: {
    id: string;
    name: string;
    pool: string;
    epoch: number;
    isolation: string;
    image: { ref: string; digest: string | null } | null;
  };
  startedOn: Date | null;
  finishedOn: Date | null;
  subjects: { name: string; sha256: string }[];
  restored: { name: string; fromJob: string; sha256: string; runId: string; jobId: string; epoch: number }[];
  caches: { key: string; sha256: string; entryId: string }[];
  logs: { stdoutSha256: string; stderrSha256: string } | null;
}

const SHA256_HEX = /^[0-9a-f]{64}$/;
const base = (u: string) => u.replace(/\/+$/, "");

/** The builder: this instance running a sandbox of the given isolation class (process | microvm). */
export function builderId(instanceUri: string, isolation: string): string {
  return `${base(instanceUri)}/builders/${encodeURIComponent(isolation)}`;
}

/** Names the run, the job and the winning attempt's epoch: one invocation per winning attempt. */
export function invocationId(instanceUri: string, runId: string, jobId: string, epoch: number): string {
  return `${base(instanceUri)}/runs/${runId}/jobs/${jobId}/attempts/${epoch}`;
}

export function composeProvenance(p: ProvenanceInput): StatementV1 {
  const ref = p.run.ref ?? p.run.commitSha;
  const deps: ResourceDescriptor[] = [{ uri: `git+${p.repo.cloneUrl}@${ref}`, digest: { gitCommit: p.run.commitSha } }];
  const workflowUri = `git+${p.repo.cloneUrl}@${p.run.commitSha}#${p.run.workflowPath}`;
  // The freeze records the file's sha256; a run that never froze its file gets the path alone.
  if (p.run.workflowSha256 && SHA256_HEX.test(p.run.workflowSha256))
    deps.push({ uri: workflowUri, name: p.run.workflowPath, digest: { sha256: p.run.workflowSha256 } });
  else deps.push({ uri: workflowUri, name: p.run.workflowPath });
  if (p.job.image?.digest) {
    const hex = p.job.image.digest.replace(/^sha256:/, "");
    deps.push({ uri: `oci://${p.job.image.ref}`, name: "image", digest: { sha256: hex } });
  }
  for (const r of p.restored)
    deps.push({
      uri: invocationId(p.instanceUri, r.runId, r.jobId, r.epoch),
      name: `artifact:${r.fromJob}/${r.name}`,
      digest: { sha256: r.sha256 },
      annotations: { kind: "artifact", run: r.runId, job: r.jobId, epoch: r.epoch },
    });
  for (const c of p.caches)
    deps.push({
      name: `cache:${c.key}`,
      digest: { sha256: c.sha256 },
      annotations: { kind: "cache", entry: c.entryId },
    });

  const byproducts: ResourceDescriptor[] = p.logs
    ? [
        { name: "stdout", digest: { sha256: p.logs.stdoutSha256 }, annotations: { mediaType: "text/plain" } },
        { name: "stderr", digest: { sha256: p.logs.stderrSha256 }, annotations: { mediaType: "text/plain" } },
      ]
    : [];
  const metadata: Record<string, unknown> = {
    invocationId: invocationId(p.instanceUri, p.run.id, p.job.id, p.job.epoch),
  };
  if (p.startedOn) metadata.startedOn = p.startedOn.toISOString();
  if (p.finishedOn) metadata.finishedOn = p.finishedOn.toISOString();

  return {
    _type: STATEMENT_TYPE_V1,
    subject: p.subjects.map((s) => ({ name: s.name, digest: { sha256: s.sha256 } })),
    predicateType: SLSA_PROVENANCE_V1,
    predicate: {
      buildDefinition: {
        buildType: KILN_BUILD_TYPE,
        externalParameters: {
          workflow: { repository: p.repo.cloneUrl, path: p.run.workflowPath, ref },
          commit: p.run.commitSha,
          inputsDigest: { sha256: p.run.inputsSha256 },
        },
        internalParameters: {
          org: p.org.id,
          trustClass: p.run.trustClass,
          isolation: p.job.isolation,
          pool: p.job.pool,
          run: p.run.id,
          job: p.job.id,
          jobName: p.job.name,
        },
        resolvedDependencies: deps,
      },
      runDetails: {
        builder: { id: builderId(p.instanceUri, p.job.isolation) },
        metadata,
        byproducts,
      },
    },
  };
}
