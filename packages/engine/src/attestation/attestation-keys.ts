// The attestor's public keys, as GET /v1/attestation/keys publishes them (public: verifying needs no
// account). The workers write the public half when they first sign with a key.
import type { Db } from "@kiln/db";
import type { AttestationSigner } from "./signer.ts";

export interface AttestationKeyView {
  key_id: string;
  algorithm: string;
  spki_pem: string;
  valid_from: string;
  valid_until: string | null;
}

// Per database client: tests run many databases in one process.
const published = new WeakMap<Db, Set<string>>();

export async function publishSigningKey(db: Db, signer: AttestationSigner): Promise<void> {
  const seen = published.get(db) ?? new Set<string>();
  if (seen.has(signer.keyId)) return;
  await db.$executeRaw`
    INSERT INTO attestation_key (key_id, algorithm, spki_pem) VALUES (${signer.keyId}, ${signer.algorithm}, ${signer.spkiPem})
    ON CONFLICT (key_id) DO NOTHING`;
  seen.add(signer.keyId);
  published.set(db, seen);
}

export async function listAttestationKeys(db: Db): Promise<AttestationKeyView[]> {
  const rows = await db.$queryRaw<
    { key_id: string; algorithm: string; spki_pem: string; valid_from: Date; valid_until: Date | null }[]
  >`SELECT key_id, algorithm, spki_pem, valid_from, valid_until FROM attestation_key ORDER BY valid_from`;
  return rows.map((r) => ({
    key_id: r.key_id,
    algorithm: r.algorithm,
    spki_pem: r.spki_pem,
    valid_from: r.valid_from.toISOString(),
    valid_until: r.valid_until ? r.valid_until.toISOString() : null,
  }));
}
