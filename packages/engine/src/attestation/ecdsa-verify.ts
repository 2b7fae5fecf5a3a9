// Signature checks on the verifying side (server-side record page, the verify CLI, the verifier
// job). Wycheproof's ecdsa_secp256r1_sha256_p1363 vectors exercise the P1363 path.
import { createPublicKey, verify } from "node:crypto";

export type SigEncoding = "der" | "ieee-p1363";

export function verifyEcdsaP256(spkiPem: string, data: Uint8Array, sig: Uint8Array, encoding: SigEncoding): boolean {
  const key = createPublicKey(spkiPem);
  if (key.asymmetricKeyType !== "ec" || key.asymmetricKeyDetails?.namedCurve !== "prime256v1") return false;
  // A P1363 signature is exactly r || s, 32 bytes each; OpenSSL would also take shorter forms.
  if (encoding === "ieee-p1363" && sig.length !== 64) return false;
  try {
    return verify("sha256", data, { key, dsaEncoding: encoding }, sig);
  } catch {
    return false;
  }
}

/** DSSE leaves the encoding to the parties: Kiln signs DER (Sigstore's); raw r||s is also accepted. */
export function verifyDsseSignature(spkiPem: string, data: Uint8Array, sig: Uint8Array): boolean {
  if (sig[0] === 0x30 && verifyEcdsaP256(spkiPem, data, sig, "der")) return true;
  return sig.length === 64 && verifyEcdsaP256(spkiPem, data, sig, "ieee-p1363");
}
