import { DomainError, tlog } from "@kiln/domain";
import { PUBLICLY_WITHHELD_KINDS, readTile } from "@kiln/engine";
import { services } from "@/server/context.ts";
import { route } from "@/server/http/route.ts";
import { publicBytes } from "../../../v1/tlog/_lib/params.ts";

export const dynamic = "force-dynamic";

/**
 * C2SP tlog-tiles under /tlog/: `tile/<L>/<N>[.p/<W>]` (W hashes of tree level 8L) and
 * `tile/entries/<N>[.p/<W>]` (entry bundles, uint16 length-prefixed), so standard monitors and
 * witnesses can follow the log. Full tiles never change and are cached as such.
 */
const handler = route({
  path: "/tlog/tile/{path}",
  summary: "C2SP tlog-tiles: hash tiles and entry bundles",
  auth: "none",
  responses: { 200: { description: "the tile's bytes", contentType: "application/octet-stream" } },
  handler: async ({ req }) => {
    // The tile path is read from the URL itself: the route builder's params are single strings.
    const t = tlog.parseTilePath(new URL(req.url).pathname.replace(/^\/tlog\//, ""));
    if (!t)
      throw new DomainError(
        "TLOG.TILE_NOT_FOUND",
        "not a tile path (tile/<L>/<N>[.p/<W>] or tile/entries/<N>[.p/<W>])",
      );
    const bytes = await readTile(services().db, t, { withheldKinds: PUBLICLY_WITHHELD_KINDS });
    if (!bytes) throw new DomainError("TLOG.TILE_NOT_FOUND", `the log does not hold ${tlog.tilePath(t)} yet`);
    return publicBytes(bytes, "application/octet-stream", t.width === tlog.TILE_WIDTH);
  },
});

export const GET = Object.assign((req: Request) => handler(req, { params: Promise.resolve({}) }), {
  spec: handler.spec,
});
