import { DomainError } from "@kiln/domain";
import { logVerifierKey } from "@kiln/engine";
import { services } from "@/server/context.ts";
import { json, route } from "@/server/http/route.ts";

export const dynamic = "force-dynamic";

/**
 * GET /v1/tlog/verifier-key: the C2SP signed-note verifier key of the log's checkpoints,
 * `<origin>+<hex key id>+<base64(0x01 || Ed25519 public key)>`. Public; pin it once and check every
 * checkpoint with it (`kiln tlog monitor`, Go's sumdb/note).
 */
export const GET = route({
  handler: async () => {
    const key = await logVerifierKey(services().db);
    if (!key)
      throw new DomainError(
        "TLOG.KEY_UNAVAILABLE",
        "the log has no key yet (the workers create it on their first checkpoint)",
      );
    const [origin, keyId] = key.split("+") as [string, string];
    return json(200, { verifier_key: key, origin, key_id: keyId, algorithm: "ed25519" });
  },
});
