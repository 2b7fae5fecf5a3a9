// The attestor's signing key (issue 17, ADR 0027). Only the workers process holds it: a 0600 PEM
// file named by KILN_ATTESTATION_KEY_FILE. Host agents and sandboxes never get the variable or
// the file (the testkit starts only the workers with it; e2e/provenance.test.ts attacks that).
import { createHash, createPrivateKey, createPublicKey, sign, type KeyObject } from "node:crypto";
import { readFile, stat } from "node:fs/promises";

export const ATTESTATION_ALGORITHM = "ecdsa-p256-sha256";

/**
 * What the attestor needs from a key: a KMS (sign over a digest, key id and SPKI from its API) can
 * implement this without the rest of the attestor changing.
 */
export interface AttestationSigner {
  readonly keyId: string;
  readonly algorithm: typeof ATTESTATION_ALGORITHM;
  readonly spkiPem: string;
  /** ECDSA P-256 over SHA-256 of `data`, DER-encoded (what Sigstore verifiers expect). */
  sign(data: Uint8Array): Promise<Uint8Array>;
}

/** Key id: lowercase hex SHA-256 of the DER SubjectPublicKeyInfo (stable, derivable by anyone). */
export function keyIdOfSpki(spkiPem: string): string {
  const der = createPublicKey(spkiPem).export({ type: "spki", format: "der" });
  return createHash("sha256").update(der).digest("hex");
}

function signerFromKey(key: KeyObject): AttestationSigner {
  if (key.asymmetricKeyType !== "ec" || key.asymmetricKeyDetails?.namedCurve !== "prime256v1")
    throw new Error("the attestation key must be an ECDSA P-256 private key");
  const spkiPem = createPublicKey(key).export({ type: "spki", format: "pem" }).toString();
  return {
    keyId: keyIdOfSpki(spkiPem),
    algorithm: ATTESTATION_ALGORITHM,
    spkiPem,
    sign: (data) => Promise.resolve(new Uint8Array(sign("sha256", data, { key, dsaEncoding: "der" }))),
  };
}

/**
 * Loads the key file, refusing one that group or others can read: a key readable by anything else
 * on the host is not "only the attestor holds it".
 */
export async function loadFileSigner(file: string): Promise<AttestationSigner> {
  const st = await stat(file);
  if ((st.mode & 0o077) !== 0)
    throw new Error(`${file} is readable by group or others (mode ${(st.mode & 0o777).toString(8)}); chmod 600 it`);
  return signerFromKey(createPrivateKey(await readFile(file, "utf8")));
}
