import { listAttestationKeys } from "@kiln/engine";
import { services } from "@/server/context.ts";
import { json, route } from "@/server/http/route.ts";

export const dynamic = "force-dynamic";

/**
 * GET /v1/attestation/keys: the attestor's public keys (key id, algorithm, SPKI PEM, validity).
 * Public on purpose: a third party verifies provenance without an account (docs/attestation.md).
 */
export const GET = route({
  handler: async () => json(200, { keys: await listAttestationKeys(services().db) }),
});
