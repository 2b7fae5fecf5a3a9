import { DomainError } from "@kiln/domain";
import { getInclusionProof, latestCheckpoint, treeRoot } from "@kiln/engine";
import { services } from "@/server/context.ts";
import { json, route } from "@/server/http/route.ts";
import { b64, treeNumber } from "../../_lib/params.ts";

export const dynamic = "force-dynamic";

/**
 * GET /v1/tlog/proofs/inclusion?index=&size=: the RFC 6962/9162 audit path of entry `index` in the
 * tree of `size` (default: the latest checkpoint's), base64 hashes leaf side first. Public.
 */
export const GET = route({
  handler: async ({ req }) => {
    const q = new URL(req.url).searchParams;
    const index = treeNumber(q.get("index"), "index") as number;
    const { db } = services();
    let size = treeNumber(q.get("size"), "size", { optional: true });
    if (size === null) {
      const cp = await latestCheckpoint(db);
      if (!cp) throw new DomainError("TLOG.NO_CHECKPOINT", "no checkpoint yet: give size");
      size = cp.size;
    }
    const hashes = await getInclusionProof(db, index, size);
    const root = await treeRoot(db, size);
    return json(200, { index, size, root_hash: b64(root), hashes: hashes.map(b64) });
  },
});
