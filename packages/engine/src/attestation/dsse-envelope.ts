// Signing and checking DSSE envelopes around in-toto statements (issue 17).
import {
  canonicalJson,
  IN_TOTO_PAYLOAD_TYPE,
  pae,
  parseEnvelope,
  toBase64,
  utf8,
  validateSlsaProvenance,
  validateStatement,
  fromUtf8,
  type DsseEnvelope,
  type RuleResult,
  type StatementV1,
} from "@kiln/domain";
import type { AttestationSigner } from "./signer.ts";
import { verifyDsseSignature } from "./ecdsa-verify.ts";

export interface SignedStatement {
  envelope: DsseEnvelope;
  /** Canonical JSON of the envelope: stored on the attestation row and appended as the tlog leaf. */
  envelopeJson: string;
}

export async function signStatement(signer: AttestationSigner, statement: StatementV1): Promise<SignedStatement> {
  const body = utf8(canonicalJson(statement));
  const sig = await signer.sign(pae(IN_TOTO_PAYLOAD_TYPE, body));
  const envelope: DsseEnvelope = {
    payload: toBase64(body),
    payloadType: IN_TOTO_PAYLOAD_TYPE,
    signatures: [{ keyid: signer.keyId, sig: toBase64(sig) }],
  };
  return { envelope, envelopeJson: canonicalJson(envelope) };
}

export interface TrustedKey {
  keyId: string;
  spkiPem: string;
}

/**
 * Verifies the envelope against trusted keys, then the in-toto and SLSA rules, in that order: a
 * payload is not parsed before its signature verifies (DSSE protocol). The failure names its rule.
 */
export function verifyAttestationEnvelope(v: unknown, keys: TrustedKey[]): RuleResult<StatementV1> {
  const parsed = parseEnvelope(v);
  if (!parsed.ok) return parsed;
  if (parsed.envelope.payloadType !== IN_TOTO_PAYLOAD_TYPE)
    return { ok: false, rule: "dsse.payload_type", message: `payloadType must be ${IN_TOTO_PAYLOAD_TYPE}` };
  const signed = pae(parsed.envelope.payloadType, parsed.payload);
  const good = parsed.signatures.some((s) =>
    keys.some((k) => (s.keyid === null || s.keyid === k.keyId) && verifyDsseSignature(k.spkiPem, signed, s.sig)),
  );
  if (!good) return { ok: false, rule: "dsse.signature", message: "no signature verifies with a trusted key" };
  const text = fromUtf8(parsed.payload);
  let json: unknown;
  try {
    json = text === null ? undefined : JSON.parse(text);
  } catch {
    json = undefined;
  }
  if (json === undefined) return { ok: false, rule: "statement.json", message: "the payload is not UTF-8 JSON" };
  const st = validateStatement(json);
  if (!st.ok) return st;
  return validateSlsaProvenance(st.value);
}
