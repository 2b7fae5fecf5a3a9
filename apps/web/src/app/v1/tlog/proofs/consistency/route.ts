import { getConsistencyProof, treeRoot } from "@kiln/engine";
import { services } from "@/server/context.ts";
import { json, route } from "@/server/http/route.ts";
import { b64, treeNumber } from "../../_lib/params.ts";

export const dynamic = "force-dynamic";

/**
 * GET /v1/tlog/proofs/consistency?from=&to=: the RFC 6962/9162 consistency proof that the tree of
 * `to` entries extends the tree of `from` (1 <= from <= to), base64 hashes in RFC order. Public.
 */
export const GET = route({
  handler: async ({ req }) => {
    const q = new URL(req.url).searchParams;
    const from = treeNumber(q.get("from"), "from") as number;
    const to = treeNumber(q.get("to"), "to") as number;
    const { db } = services();
    const hashes = await getConsistencyProof(db, from, to);
    const [r1, r2] = await Promise.all([treeRoot(db, from), treeRoot(db, to)]);
    return json(200, { from, to, from_root_hash: b64(r1), to_root_hash: b64(r2), hashes: hashes.map(b64) });
  },
});
