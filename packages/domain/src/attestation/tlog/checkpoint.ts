// The C2SP tlog-checkpoint body (c2sp.org/tlog-checkpoint): origin line, decimal tree size, base64
// root hash, then optional extension lines; every line ends in a newline. The signatures around it
// are a signed note (note.ts).
import { fromBase64, toBase64 } from "./bytes.ts";
import { HASH_SIZE } from "./hash.ts";

export interface Checkpoint {
  origin: string;
  /** bigint: a checkpoint from any log parses, not only one below 2^53. */
  size: bigint;
  rootHash: Uint8Array;
  /** Extension lines (opaque, kept in order). */
  extensions: string[];
}

export type CheckpointParse = { ok: true; checkpoint: Checkpoint } | { ok: false; reason: string };

const U64_MAX = (1n << 64n) - 1n;

export function formatCheckpoint(c: {
  origin: string;
  size: bigint | number;
  rootHash: Uint8Array;
  extensions?: string[];
}): string {
  if (!validOrigin(c.origin)) throw new RangeError("origin must be a non-empty line");
  if (c.rootHash.length !== HASH_SIZE) throw new RangeError("root hash must be 32 bytes");
  const ext = (c.extensions ?? []).map((e) => `${e}\n`).join("");
  return `${c.origin}\n${BigInt(c.size).toString(10)}\n${toBase64(c.rootHash)}\n${ext}`;
}

function validOrigin(origin: string): boolean {
  // A line of printable text: no control characters (a newline would move the size line).
  return origin.length > 0 && !/\p{Cc}/u.test(origin);
}

export function parseCheckpoint(body: string): CheckpointParse {
  if (!body.endsWith("\n")) return { ok: false, reason: "checkpoint body must end with a newline" };
  const lines = body.slice(0, -1).split("\n");
  const [origin, sizeText, rootText, ...extensions] = lines;
  if (origin === undefined || !validOrigin(origin)) return { ok: false, reason: "missing origin line" };
  if (sizeText === undefined || !/^(0|[1-9][0-9]*)$/.test(sizeText))
    return { ok: false, reason: "tree size is not a decimal number" };
  const size = BigInt(sizeText);
  if (size > U64_MAX) return { ok: false, reason: "tree size outside uint64" };
  const rootHash = rootText === undefined ? null : fromBase64(rootText);
  if (!rootHash || rootHash.length !== HASH_SIZE) return { ok: false, reason: "root hash is not base64 of 32 bytes" };
  if (extensions.some((e) => e.length === 0)) return { ok: false, reason: "empty extension line" };
  return { ok: true, checkpoint: { origin, size, rootHash, extensions } };
}
