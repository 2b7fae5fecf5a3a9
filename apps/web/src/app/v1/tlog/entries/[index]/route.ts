import { getTlogEntry } from "@kiln/engine";
import { services } from "@/server/context.ts";
import { route } from "@/server/http/route.ts";
import { publicBytes, treeNumber } from "../../_lib/params.ts";

export const dynamic = "force-dynamic";

/** GET /v1/tlog/entries/{index}: exactly the leaf's bytes (leaf hash = SHA-256(0x00 || body)). Public. */
export const GET = route({
  handler: async ({ params }) => {
    const index = treeNumber(params.index, "index") as number;
    const e = await getTlogEntry(services().db, index);
    const res = publicBytes(e.bytes, "application/octet-stream", true);
    res.headers.set("x-kiln-tlog-kind", e.kind);
    return res;
  },
});
