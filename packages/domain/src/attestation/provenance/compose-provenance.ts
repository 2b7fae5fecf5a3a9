// Composes the SLSA v1 statement for one successful job from control-plane records only (issue 17):
// never from anything the job said about itself. The caller loads the records; this is pure.
import { SLSA_PROVENANCE_V1, STATEMENT_TYPE_V1, type ResourceDescriptor, type StatementV1 } from "./in-toto.ts";

/** Kiln's buildType for a trusted run, documented in docs/attestation.md (what each parameter means). */
export const KILN_BUILD_TYPE = "https://kiln.dev/attestation/buildtypes/workflow/v1";
/**
 * The buildType of a run that is not trusted (a non-member's fork PR): a distinct type, so a verifier
 * that pins Kiln's trusted buildType (as SLSA verification does) never accepts a fork's bytes as the
 * project's (issue 28).
 */
export const KILN_UNTRUSTED_BUILD_TYPE = "https://kiln.dev/attestation/buildtypes/untrusted-workflow/v1";

/**
 * Who ran the job, from operator-controlled records only (issue 28), never from the isolation an agent
 * reports about itself: a host in a platform pool the operator runs (its class is what the operator
 * declared for the pool), or a runner an org registered (its own machine, whatever it claims to be).
 */
export type BuildHost = { kind: "platform"; isolation: "process" | "microvm" } | { kind: "self-hosted" };

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
    /** The isolation class the host's agent reported (recorded, never the builder id's source). */
    isolation: string;
    host: BuildHost;
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

/**
 * The builder (issue 28). A trusted run on a platform host: `<instance>/builders/<process|microvm>`, the
 * platform builder, the only one production takes; on an org's registered runner:
 * `<instance>/builders/self-hosted`. Any other trust class is named in the id:
 * `<instance>/builders/untrusted/<process|microvm|self-hosted>`, a builder of its own.
 */
export function builderId(instanceUri: string, trustClass: string, host: BuildHost): string {
  const where = host.kind === "platform" ? host.isolation : "self-hosted";
  return trustClass === "trusted"
    ? `${base(instanceUri)}/builders/${where}`
    : `${base(instanceUri)}/builders/untrusted/${where}`;
}

export function buildTypeFor(trustClass: string): string {
  return trustClass === "trusted" ? KILN_BUILD_TYPE : KILN_UNTRUSTED_BUILD_TYPE;
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
        buildType: buildTypeFor(p.run.trustClass),
        // The trust class is an external parameter too: SLSA verifiers check these, not internalParameters.
        externalParameters: {
          workflow: { repository: p.repo.cloneUrl, path: p.run.workflowPath, ref },
          commit: p.run.commitSha,
          inputsDigest: { sha256: p.run.inputsSha256 },
          trustClass: p.run.trustClass,
        },
        internalParameters: {
          org: p.org.id,
          trustClass: p.run.trustClass,
          isolation: p.job.isolation,
          host: p.job.host.kind,
          pool: p.job.pool,
          run: p.run.id,
          job: p.job.id,
          jobName: p.job.name,
        },
        resolvedDependencies: deps,
      },
      runDetails: {
        builder: { id: builderId(p.instanceUri, p.run.trustClass, p.job.host) },
        metadata,
        byproducts,
      },
    },
  };
}
