// C2SP tlog-tiles (c2sp.org/tlog-tiles): tiles of height 8, so a level-L tile holds up to 256
// hashes of tree level 8L; `tile/<L>/<N>[.p/<W>]`, with N written in 3-digit groups, all but the
// last prefixed "x" (1234067 -> x001/x234/067); entry bundles `tile/entries/<N>[.p/<W>]` frame each
// entry with a big-endian uint16 length.
export const TILE_HEIGHT = 8;
export const TILE_WIDTH = 256;

export interface TileRef {
  /** null for an entry bundle (`tile/entries/...`). */
  level: number | null;
  index: number;
  /** 1..256; 256 is a full tile (no `.p/` suffix). */
  width: number;
}

export function encodeTileIndex(n: number): string {
  if (!Number.isSafeInteger(n) || n < 0) throw new RangeError("tile index must be a non-negative integer");
  const groups: string[] = [];
  let v = n;
  do {
    groups.unshift(String(v % 1000).padStart(3, "0"));
    v = Math.floor(v / 1000);
  } while (v > 0);
  return groups.map((g, i) => (i < groups.length - 1 ? `x${g}` : g)).join("/");
}

export function tilePath(t: TileRef): string {
  const base = `tile/${t.level === null ? "entries" : String(t.level)}/${encodeTileIndex(t.index)}`;
  return t.width === TILE_WIDTH ? base : `${base}.p/${t.width}`;
}

/** The tile a path names (the part after the log's prefix), or null when it is not canonical. */
export function parseTilePath(path: string): TileRef | null {
  const m = /^tile\/(entries|0|[1-9][0-9]{0,2})\/((?:x[0-9]{3}\/)*[0-9]{3})(?:\.p\/([1-9][0-9]{0,2}))?$/.exec(path);
  if (!m) return null;
  const level = m[1] === "entries" ? null : Number(m[1]);
  const groups = (m[2] as string).split("/").map((g) => g.replace(/^x/, ""));
  // Leading zero groups (x000/...) are not canonical: two paths would name one tile.
  if (groups.length > 1 && groups[0] === "000") return null;
  if (groups.length > 5) return null;
  const index = groups.reduce((acc, g) => acc * 1000 + Number(g), 0);
  // A partial tile is 1..255 wide; 256 is the full tile, which has no .p/ suffix.
  const width = m[3] === undefined ? TILE_WIDTH : Number(m[3]);
  if (m[3] !== undefined && width >= TILE_WIDTH) return null;
  return { level, index, width };
}

/** Entry bundle framing: each entry as a big-endian uint16 length then its bytes. */
export function encodeEntryBundle(entries: Uint8Array[]): Uint8Array {
  const total = entries.reduce((n, e) => n + 2 + e.length, 0);
  const out = new Uint8Array(total);
  let at = 0;
  for (const e of entries) {
    if (e.length > 0xffff) throw new RangeError("an entry bundle entry is at most 65535 bytes");
    out[at] = e.length >> 8;
    out[at + 1] = e.length & 0xff;
    out.set(e, at + 2);
    at += 2 + e.length;
  }
  return out;
}

export function decodeEntryBundle(bundle: Uint8Array): Uint8Array[] | null {
  const out: Uint8Array[] = [];
  let at = 0;
  while (at < bundle.length) {
    if (at + 2 > bundle.length) return null;
    const len = ((bundle[at] as number) << 8) | (bundle[at + 1] as number);
    if (at + 2 + len > bundle.length) return null;
    out.push(bundle.slice(at + 2, at + 2 + len));
    at += 2 + len;
  }
  return out;
}

/** The tile width a tree of `size` gives tile (level, index): 0 when the tile is not yet begun. */
export function tileWidthAt(size: number, level: number, index: number): number {
  const nodesAtLevel = Math.floor(size / 2 ** (TILE_HEIGHT * level));
  return Math.max(0, Math.min(TILE_WIDTH, nodesAtLevel - index * TILE_WIDTH));
}
