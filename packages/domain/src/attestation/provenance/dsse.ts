// DSSE v1 (secure-systems-lab/dsse protocol.md and envelope.md): what is signed is the
// Pre-Authentication Encoding of the payload type and the payload bytes, never the JSON envelope,
// so the type cannot be swapped under a valid signature.
import { concatBytes, fromBase64Any, utf8 } from "./bytes.ts";

export const IN_TOTO_PAYLOAD_TYPE = "application/vnd.in-toto+json";

export interface DsseSignature {
  keyid?: string;
  sig: string;
}

export interface DsseEnvelope {
  payload: string;
  payloadType: string;
  signatures: DsseSignature[];
}

/** PAE(type, body) = "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body; LEN counts bytes. */
export function pae(payloadType: string, body: Uint8Array): Uint8Array {
  const type = utf8(payloadType);
  return concatBytes(utf8(`DSSEv1 ${type.length} `), type, utf8(` ${body.length} `), body);
}

export type EnvelopeParse =
  | { ok: true; envelope: DsseEnvelope; payload: Uint8Array; signatures: { keyid: string | null; sig: Uint8Array }[] }
  | { ok: false; rule: string; message: string };

/** Decodes an envelope; either base64 alphabet is accepted (the spec's MUST), anything else refused. */
export function parseEnvelope(v: unknown): EnvelopeParse {
  const bad = (rule: string, message: string): EnvelopeParse => ({ ok: false, rule, message });
  if (!v || typeof v !== "object" || Array.isArray(v)) return bad("dsse.envelope", "the envelope is not an object");
  const e = v as Record<string, unknown>;
  if (typeof e.payloadType !== "string" || e.payloadType === "")
    return bad("dsse.payload_type", "payloadType is missing");
  if (typeof e.payload !== "string") return bad("dsse.payload", "payload is missing");
  const payload = fromBase64Any(e.payload);
  if (!payload) return bad("dsse.payload", "payload is not base64");
  if (!Array.isArray(e.signatures) || e.signatures.length === 0)
    return bad("dsse.signatures", "the envelope has no signatures");
  const signatures: { keyid: string | null; sig: Uint8Array }[] = [];
  for (const s of e.signatures as unknown[]) {
    const so = (s ?? {}) as Record<string, unknown>;
    const sig = typeof so.sig === "string" ? fromBase64Any(so.sig) : null;
    if (!sig || sig.length === 0) return bad("dsse.signature_encoding", "a signature is not base64");
    signatures.push({ keyid: typeof so.keyid === "string" ? so.keyid : null, sig });
  }
  return {
    ok: true,
    envelope: { payload: e.payload, payloadType: e.payloadType, signatures: e.signatures as DsseSignature[] },
    payload,
    signatures,
  };
}
