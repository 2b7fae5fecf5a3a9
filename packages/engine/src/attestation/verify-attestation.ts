// The verifier (issue 17, ADR 0027): re-checks a new attestation against the transparency log and
// the bytes object storage actually holds. A mismatch quarantines the artifact (kept, never
// served) and raises the org home's alert. It reads the object itself: the bytes never pass
// through the web app.
import { withTx, type Db } from "@kiln/db";
import { bytesEqual, isDomainError, utf8 } from "@kiln/domain";
import type { ArtifactStore } from "../artifacts/index.ts";
import { readBackPlaintext } from "../artifacts/index.ts";
import { attestationLeaf } from "./tlog-commitment.ts";
import type { TlogPort } from "./tlog-port.ts";

export type VerifyResult =
  | { kind: "verified" }
  | { kind: "mismatch"; reason: string; quarantined: number }
  | { kind: "already"; state: string }
  | { kind: "not_found" }
  /** No checkpoint covers the entry yet: the job is retried (pg-boss backoff) until one does. */
  | { kind: "waiting_for_checkpoint" };

interface Subject {
  generation_id: string;
  name: string;
  sha256: string;
  object_key: string;
  job_id: string;
  run_id: string;
  org_id: string;
  shred_key_id: string | null;
}

export async function verifyAttestation(
  d: { db: Db; store: ArtifactStore; tlog: TlogPort },
  attestationId: string,
): Promise<VerifyResult> {
  const rows = await d.db.$queryRaw<
    { id: string; org_id: string; state: string; envelope: string; tlog_salt: Uint8Array | null; tlog_index: bigint }[]
  >`
    SELECT id, org_id, state, envelope, tlog_salt, tlog_index FROM attestation WHERE id = ${attestationId}::uuid`;
  const a = rows[0];
  if (!a) return { kind: "not_found" };
  if (a.state !== "logged") return { kind: "already", state: a.state };

  const problems: { generationId: string | null; reason: string; expected: string; observed: string | null }[] = [];
  const leaf = await d.tlog.entry(d.db, a.tlog_index);
  const mine = attestationLeaf(utf8(a.envelope), a.tlog_salt ? new Uint8Array(a.tlog_salt) : null);
  if (!leaf || !bytesEqual(leaf, mine))
    problems.push({ generationId: null, reason: "tlog.entry_mismatch", expected: "", observed: null });
  else {
    const inc = await d.tlog.inclusionInLatest(d.db, a.tlog_index);
    if (!inc) return { kind: "waiting_for_checkpoint" };
    const key = await d.tlog.verifierKey(d.db);
    const cp = d.tlog.verifyCheckpoint(inc.checkpoint, key);
    if (
      !cp ||
      cp.rootHash !== inc.rootHash ||
      cp.size !== inc.treeSize ||
      !d.tlog.verifyInclusion(d.tlog.leafHash(leaf), inc)
    )
      problems.push({ generationId: null, reason: "tlog.inclusion_failed", expected: "", observed: null });
  }

  const subjects = await d.db.$queryRaw<Subject[]>`
    SELECT s.generation_id, s.name, s.sha256, g.object_key, g.job_id, g.run_id, g.org_id::text, g.shred_key_id::text
    FROM attestation_subject s JOIN artifact_generation g ON g.id = s.generation_id
    WHERE s.attestation_id = ${attestationId}::uuid ORDER BY s.name`;
  for (const s of subjects) {
    // A sealed artifact (ADR 0037) is opened under its key: its subject digest is the plaintext's.
    // Its key already destroyed means its bytes were deleted under retention: nothing is served,
    // so there is nothing to check. Without a key store the job fails and is retried, never a verdict.
    let got: { sizeBytes: number; sha256: string };
    try {
      got = await readBackPlaintext(d.store, s.org_id, s.object_key, s.shred_key_id);
    } catch (e) {
      if (isDomainError(e) && e.code === "SHRED.KEY_DESTROYED") continue;
      throw e;
    }
    if (got.sizeBytes < 0)
      problems.push({ generationId: s.generation_id, reason: "object.missing", expected: s.sha256, observed: null });
    else if (got.sha256 !== s.sha256)
      problems.push({
        generationId: s.generation_id,
        reason: "object.digest_mismatch",
        expected: s.sha256,
        observed: got.sha256,
      });
  }

  return withTx(d.db, "verify-attestation", async (tx) => {
    const state = problems.length === 0 ? "verified" : "mismatch";
    const detail = problems.length === 0 ? null : problems.map((p) => p.reason).join(",");
    const n = await tx.$executeRaw`
      UPDATE attestation SET state = ${state}, verified_at = now(), verify_detail = ${detail}
      WHERE id = ${attestationId}::uuid AND state = 'logged'`;
    if (n !== 1) return { kind: "already" as const, state: "settled" };
    if (problems.length === 0) return { kind: "verified" as const };
    // A log problem taints every subject of the statement; a byte problem only its artifact.
    const logProblem = problems.find((p) => p.generationId === null);
    let quarantined = 0;
    for (const s of subjects) {
      const p = problems.find((x) => x.generationId === s.generation_id) ?? logProblem;
      if (!p) continue;
      quarantined += await tx.$executeRaw`
        INSERT INTO artifact_quarantine (generation_id, org_id, run_id, job_id, attestation_id, reason, expected_sha256, observed_sha256)
        VALUES (${s.generation_id}::uuid, ${a.org_id}::uuid, ${s.run_id}::uuid, ${s.job_id}::uuid, ${attestationId}::uuid,
                ${p.reason}, ${s.sha256}, ${p.observed})
        ON CONFLICT (generation_id) DO NOTHING`;
    }
    return { kind: "mismatch" as const, reason: detail ?? "", quarantined };
  });
}
