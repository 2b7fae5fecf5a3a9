// `kiln verify` (issue 17): everything an auditor checks without Kiln's cooperation, given the
// file, the bundle, the attestor's published keys and the log's verifier key. Each failure names
// the rule it broke, so a non-zero exit says exactly what did not hold.
import {
  canonicalJson,
  checkProvenanceSource,
  tlog,
  toBase64,
  utf8,
  type ProvenanceTrust,
  type StatementV1,
} from "@kiln/domain";
import type { AttestationBundle } from "./attestation-bundle.ts";
import { SIGSTORE_BUNDLE_V03 } from "./attestation-bundle.ts";
import { verifyAttestationEnvelope, type TrustedKey } from "./dsse-envelope.ts";
import { attestationLeaf, SALT_BYTES } from "./tlog-commitment.ts";
import { openCheckpoint, tlogHasher } from "./tlog/tlog-crypto.ts";

export interface OfflineInput {
  /** Lowercase hex SHA-256 of the file being verified. */
  fileSha256: string;
  bundle: unknown;
  keys: TrustedKey[];
  logVerifierKey: string;
  /** A checkpoint fetched independently (GET /tlog/checkpoint); default: the bundle's own. */
  checkpoint?: string;
  /** The repository the auditor expects the artifact to be built from (`--source`, issue 28). */
  source: string;
  /** Accept a build of an untrusted run (a fork PR); its trust class is still reported. */
  allowUntrusted?: boolean;
}

export type OfflineResult =
  | {
      ok: true;
      statement: StatementV1;
      subject: string;
      logIndex: string;
      treeSize: string;
      trust: ProvenanceTrust;
    }
  | { ok: false; rule: string; message: string };

const fail = (rule: string, message: string): OfflineResult => ({ ok: false, rule, message });

export function verifyOffline(i: OfflineInput): OfflineResult {
  const b = i.bundle as Partial<AttestationBundle> | null;
  if (!b || typeof b !== "object" || !b.bundle || !b.transparency_log)
    return fail("bundle.format", "not a Kiln attestation bundle (GET /v1/artifacts/{id}/attestation)");
  if (b.bundle.mediaType !== SIGSTORE_BUNDLE_V03)
    return fail("bundle.media_type", `mediaType must be ${SIGSTORE_BUNDLE_V03}`);
  const hint = b.bundle.verificationMaterial?.publicKey?.hint;
  const keys = i.keys.filter((k) => k.keyId === hint);
  if (keys.length === 0)
    return fail("key.unknown", `the bundle names key ${String(hint)}, which is not among the trusted keys`);

  const st = verifyAttestationEnvelope(b.bundle.dsseEnvelope, keys);
  if (!st.ok) return st;
  const subject = st.value.subject.find((s) => s.digest.sha256 === i.fileSha256);
  if (!subject) return fail("subject.digest", `no subject has sha256 ${i.fileSha256}`);
  // Whose build it is: the repository asked for, and a trusted run unless untrusted ones are allowed.
  const source = checkProvenanceSource(st.value, { source: i.source, allowUntrusted: i.allowUntrusted ?? false });
  if (!source.ok) return source;

  // The log's leaf is the salted commitment to the envelope's canonical JSON (issue 28), or the
  // JSON itself for an entry logged before: recompute it, never trust a stated hash.
  const rawSalt = b.transparency_log.leaf_salt;
  const salt = typeof rawSalt === "string" ? tlog.fromBase64(rawSalt) : null;
  if (rawSalt !== undefined && rawSalt !== null && (salt === null || salt.length !== SALT_BYTES))
    return fail("tlog.leaf_salt", `leaf_salt must be the base64 of ${SALT_BYTES} bytes`);
  const leafHash = tlogHasher.leaf(attestationLeaf(utf8(canonicalJson(b.bundle.dsseEnvelope)), salt));
  if (b.transparency_log.leaf_hash !== toBase64(leafHash))
    return fail("tlog.leaf_hash", "the stated leaf hash is not the hash of this envelope's log leaf");
  const p = b.transparency_log.inclusion_proof;
  if (!p)
    return fail(
      "tlog.inclusion_missing",
      "the bundle has no inclusion proof (fetch it again once a checkpoint covers it)",
    );
  const opened = openCheckpoint(i.checkpoint ?? p.checkpoint, i.logVerifierKey);
  if (!opened.ok) return fail("tlog.checkpoint", `${opened.rule}: ${opened.reason}`);
  if (opened.checkpoint.size !== BigInt(p.tree_size))
    return fail(
      "tlog.checkpoint_size",
      `the proof is for a tree of ${p.tree_size}, the checkpoint has ${opened.checkpoint.size}`,
    );
  if (p.log_index !== b.transparency_log.log_index)
    return fail("tlog.index", "the proof names another index than the entry");
  const hashes = p.hashes.map((h) => tlog.fromBase64(h));
  if (hashes.some((h) => h === null)) return fail("tlog.inclusion", "a proof hash is not base64");
  const inc = tlog.verifyInclusion(
    tlogHasher,
    BigInt(p.log_index),
    BigInt(p.tree_size),
    leafHash,
    hashes as Uint8Array[],
    opened.checkpoint.rootHash,
  );
  if (!inc.ok) return fail("tlog.inclusion", inc.reason);
  return {
    ok: true,
    statement: st.value,
    subject: subject.name,
    logIndex: p.log_index,
    treeSize: p.tree_size,
    trust: source.trust,
  };
}
