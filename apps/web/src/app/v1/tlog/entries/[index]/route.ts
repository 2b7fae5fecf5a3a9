import { DomainError } from "@kiln/domain";
import { getTlogEntry, PUBLICLY_WITHHELD_KINDS } from "@kiln/engine";
import { services } from "@/server/context.ts";
import { route } from "@/server/http/route.ts";
import { publicBytes, treeNumber } from "../../_lib/params.ts";

export const dynamic = "force-dynamic";

/**
 * GET /v1/tlog/entries/{index}: exactly the leaf's bytes (leaf hash = SHA-256(0x00 || body)). Public.
 * An attestation's leaf is a salted commitment (ADR 0026, issue 28); an envelope logged in full
 * before that is withheld (410), its leaf hash and proofs still served.
 */
export const GET = route({
  path: "/v1/tlog/entries/{index}",
  summary: "An entry's exact leaf bytes",
  auth: "none",
  responses: {
    200: { description: "the leaf bytes", contentType: "application/octet-stream" },
    410: { description: "TLOG.ENTRY_WITHHELD: an envelope logged in full before issue 28" },
  },
  handler: async ({ params }) => {
    const index = treeNumber(params.index, "index") as number;
    const e = await getTlogEntry(services().db, index);
    if (PUBLICLY_WITHHELD_KINDS.includes(e.kind))
      throw new DomainError(
        "TLOG.ENTRY_WITHHELD",
        `entry ${index} is an envelope logged before issue 28: its org's members get it at /v1/tlog/entries/${index}/bundle`,
      );
    const res = publicBytes(e.bytes, "application/octet-stream", true);
    res.headers.set("x-kiln-tlog-kind", e.kind);
    return res;
  },
});
