// The transparency log's storage (docs/adr/0026): appends through the tlog_append() SQL function
// (one writer at a time on the sequencer row, one leaf per dedupe key), reads of entries, stored
// subtree hashes, proofs and tiles. Proofs fetch the O(log^2 n) perfect nodes they fold from in one
// query; nothing rehashes the log.
import type { DbOrTx, SqlClient } from "@kiln/db";
import { DomainError, tlog } from "@kiln/domain";
import { tlogHasher } from "./tlog-crypto.ts";

/** A Prisma client or transaction, or a node-postgres client inside withTx (ADR 0015's hot paths). */
export type TlogConn = DbOrTx | SqlClient;

export interface AppendInput {
  /** What the entry is, e.g. "dsse" (lower-case, [a-z0-9_.-]). */
  kind: string;
  /** The leaf data, exactly as served at GET /v1/tlog/entries/{index}: 1..65535 bytes. */
  bytes: Uint8Array;
  /** Deterministic per statement (e.g. the attestation's id): a replay returns the same index. */
  dedupeKey: string;
}

export interface AppendResult {
  index: number;
  /** false on a replay: the entry was already in the log. */
  created: boolean;
  /** On a replay, whether the stored bytes equal these; the stored entry is the one that counts. */
  sameBytes: boolean;
}

export const MAX_ENTRY_BYTES = 65_535;

function isPrisma(c: TlogConn): c is DbOrTx {
  return "$queryRawUnsafe" in c;
}

async function query<R>(c: TlogConn, text: string, values: unknown[]): Promise<R[]> {
  if (isPrisma(c)) return c.$queryRawUnsafe<R[]>(text, ...values);
  return (await c.query<R & Record<string, unknown>>(text, values)).rows;
}

/** Why the log would refuse this entry, or null: callers batching entries check each one first. */
export function entryProblem(input: AppendInput): string | null {
  if (input.bytes.length === 0 || input.bytes.length > MAX_ENTRY_BYTES)
    return `an entry is 1..${MAX_ENTRY_BYTES} bytes`;
  if (!/^[a-z0-9][a-z0-9_.-]{0,62}$/.test(input.kind)) return "kind must match [a-z0-9][a-z0-9_.-]{0,62}";
  if (input.dedupeKey.length === 0 || input.dedupeKey.length > 300) return "dedupeKey is 1..300 characters";
  return null;
}

/**
 * Appends one entry inside the caller's transaction. The sequencer row stays locked until that
 * transaction ends, so append last and commit promptly: the lock is what makes indices dense.
 */
export async function appendTlogEntry(c: TlogConn, input: AppendInput): Promise<AppendResult> {
  const [r] = await appendTlogEntries(c, [input]);
  if (!r) throw new Error("tlog_append returned no row");
  return r;
}

/**
 * Appends several entries in one statement, in the order given, inside the caller's transaction:
 * one sequencer lock and one commit for all of them (ADR 0026, "Batched appends"). Each is still
 * its own tlog_append call, with its dedupe lookup and the parents it completes, and each call
 * sees the ones before it (the function is VOLATILE), so a key repeated within the batch gets the
 * first one's index. Results are in input order. An invalid entry refuses the whole batch: check
 * entryProblem first to keep a bad one out.
 */
export async function appendTlogEntries(c: TlogConn, inputs: AppendInput[]): Promise<AppendResult[]> {
  if (inputs.length === 0) return [];
  for (const input of inputs) {
    const problem = entryProblem(input);
    if (problem) throw new DomainError("TLOG.ENTRY_INVALID", problem);
  }
  // ORDER BY ord inside the subquery: a sorted subquery is not flattened, so the lateral calls
  // run in input order (indices follow the caller's order; correctness does not depend on it).
  // Bodies travel as base64 text: both drivers (Prisma's and node-postgres) pass a text[] alike.
  const rows = await query<{ ord: string; idx: string; created: boolean; same_body: boolean }>(
    c,
    `SELECT x.ord::text AS ord, a.idx::text AS idx, a.created, a.same_body
     FROM (SELECT * FROM unnest($1::text[], $2::text[], $3::text[]) WITH ORDINALITY AS u(kind, body, dedupe_key, ord)
           ORDER BY ord) x
     CROSS JOIN LATERAL tlog_append(x.kind, decode(x.body, 'base64'), x.dedupe_key) a`,
    [
      inputs.map((i) => i.kind),
      inputs.map((i) => Buffer.from(i.bytes.buffer, i.bytes.byteOffset, i.bytes.byteLength).toString("base64")),
      inputs.map((i) => i.dedupeKey),
    ],
  );
  if (rows.length !== inputs.length) throw new Error(`tlog_append returned ${rows.length} rows for ${inputs.length}`);
  const out: AppendResult[] = new Array<AppendResult>(inputs.length);
  for (const r of rows) out[Number(r.ord) - 1] = { index: Number(r.idx), created: r.created, sameBytes: r.same_body };
  return out;
}

/** Committed entries: the sequencer's size as this transaction sees it. */
export async function tlogSize(c: TlogConn): Promise<number> {
  const rows = await query<{ size: string }>(c, `SELECT size::text AS size FROM tlog_sequencer`, []);
  return Number(rows[0]?.size ?? 0);
}

export interface TlogEntry {
  index: number;
  kind: string;
  bytes: Uint8Array;
  leafHash: Uint8Array;
  createdAt: Date;
}

export async function getTlogEntry(c: TlogConn, index: number): Promise<TlogEntry> {
  checkIndex("index", index);
  const rows = await query<{ kind: string; body: Uint8Array; hash: Uint8Array; created_at: Date }>(
    c,
    `SELECT e.kind, e.body, n.hash, e.created_at FROM tlog_entry e
     JOIN tlog_node n ON n.level = 0 AND n.idx = e.idx WHERE e.idx = $1`,
    [index],
  );
  const r = rows[0];
  if (!r) throw new DomainError("TLOG.ENTRY_NOT_FOUND", `no entry ${index} in the log`);
  return {
    index,
    kind: r.kind,
    bytes: new Uint8Array(r.body),
    leafHash: new Uint8Array(r.hash),
    createdAt: r.created_at,
  };
}

function checkIndex(name: string, v: number): void {
  if (!Number.isSafeInteger(v) || v < 0)
    throw new DomainError("REQUEST.INVALID", `${name} must be a non-negative integer`);
}

/** Stored perfect-node hashes, keyed "level/index". Missing nodes mean the tree is smaller. */
async function loadNodes(c: TlogConn, nodes: tlog.NodeId[]): Promise<Map<string, Uint8Array>> {
  const out = new Map<string, Uint8Array>();
  if (nodes.length === 0) return out;
  const rows = await query<{ level: number; idx: string; hash: Uint8Array }>(
    c,
    `SELECT n.level, n.idx::text AS idx, n.hash FROM tlog_node n
     JOIN unnest($1::smallint[], $2::bigint[]) AS w(level, idx) ON n.level = w.level AND n.idx = w.idx`,
    [nodes.map((n) => n.level), nodes.map((n) => n.index)],
  );
  for (const r of rows) out.set(`${r.level}/${r.idx}`, new Uint8Array(r.hash));
  return out;
}

/** The hashes of the given leaf ranges, in order, from one query. */
async function rangeHashes(c: TlogConn, ranges: tlog.LeafRange[]): Promise<Uint8Array[]> {
  const perRange = ranges.map((r) => tlog.rangeNodes(r));
  const nodes = await loadNodes(c, perRange.flat());
  return perRange.map((ns) =>
    tlog.foldNodes(
      tlogHasher,
      ns.map((n) => {
        const h = nodes.get(`${n.level}/${n.index}`);
        if (!h) throw new Error(`tlog node ${n.level}/${n.index} missing`);
        return h;
      }),
    ),
  );
}

/** Sizes a proof may name: up to the committed log. */
async function checkSize(c: TlogConn, size: number, what: string): Promise<void> {
  checkIndex(what, size);
  const n = await tlogSize(c);
  if (size > n) throw new DomainError("TLOG.SIZE_BEYOND_LOG", `${what} ${size} is beyond the log's ${n} entries`);
}

export async function treeRoot(c: TlogConn, size: number): Promise<Uint8Array> {
  await checkSize(c, size, "size");
  if (size === 0) return tlogHasher.emptyRoot();
  const [root] = await rangeHashes(c, [{ start: 0, end: size }]);
  return root as Uint8Array;
}

/** RFC 6962/9162 inclusion proof of entry `index` in the tree of `size`, leaf side first. */
export async function getInclusionProof(c: TlogConn, index: number, size: number): Promise<Uint8Array[]> {
  checkIndex("index", index);
  await checkSize(c, size, "size");
  if (index >= size) throw new DomainError("TLOG.INDEX_OUT_OF_RANGE", `index ${index} is not below size ${size}`);
  return rangeHashes(c, tlog.inclusionRanges(index, size));
}

/** RFC 6962/9162 consistency proof from the tree of `from` to the tree of `to`. */
export async function getConsistencyProof(c: TlogConn, from: number, to: number): Promise<Uint8Array[]> {
  checkIndex("from", from);
  await checkSize(c, to, "to");
  if (from > to) throw new DomainError("TLOG.INDEX_OUT_OF_RANGE", `from ${from} is above to ${to}`);
  // Every tree extends the empty one: there is nothing to prove, and verifiers refuse such a proof.
  if (from === 0) throw new DomainError("TLOG.INDEX_OUT_OF_RANGE", "a consistency proof starts at size 1 or more");
  return rangeHashes(c, tlog.consistencyRanges(from, to));
}

/**
 * A C2SP hash tile's bytes (W concatenated 32-byte hashes of level 8L) or an entry bundle; null when
 * the log does not (yet) hold that many. Tiles are immutable once they exist.
 */
export async function readTile(
  c: TlogConn,
  t: tlog.TileRef,
  opts: { withheldKinds?: readonly string[] } = {},
): Promise<Uint8Array | null> {
  const first = t.index * tlog.TILE_WIDTH;
  const last = first + t.width - 1;
  if (!Number.isSafeInteger(last)) return null;
  if (t.level === null) {
    const rows = await query<{ body: Uint8Array; kind: string }>(
      c,
      `SELECT body, kind FROM tlog_entry WHERE idx BETWEEN $1 AND $2 ORDER BY idx`,
      [first, last],
    );
    if (rows.length !== t.width) return null;
    // An entry bundle cannot leave one entry out (its readers count them): withhold it whole.
    const withheld = opts.withheldKinds ?? [];
    if (rows.some((r) => withheld.includes(r.kind)))
      throw new DomainError("TLOG.ENTRY_WITHHELD", "this entry bundle holds entries whose text is not public");
    return tlog.encodeEntryBundle(rows.map((r) => new Uint8Array(r.body)));
  }
  const level = t.level * tlog.TILE_HEIGHT;
  if (level > 63) return null;
  const rows = await query<{ hash: Uint8Array }>(
    c,
    `SELECT hash FROM tlog_node WHERE level = $1 AND idx BETWEEN $2 AND $3 ORDER BY idx`,
    [level, first, last],
  );
  return rows.length === t.width ? tlog.concatBytes(...rows.map((r) => new Uint8Array(r.hash))) : null;
}
