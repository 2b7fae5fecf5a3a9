import { DomainError } from "@kiln/domain";

/**
 * A tree index or size from the query or path: decimal digits only (no sign, exponent or hex), at
 * most 2^53-1. Anything else is REQUEST.INVALID, never a 500 or a silently rounded number.
 */
export function treeNumber(
  raw: string | null | undefined,
  name: string,
  opts: { optional?: boolean } = {},
): number | null {
  if (raw === null || raw === undefined || raw === "") {
    if (opts.optional) return null;
    throw new DomainError("REQUEST.INVALID", `${name} is required`);
  }
  if (!/^(0|[1-9][0-9]{0,15})$/.test(raw))
    throw new DomainError("REQUEST.INVALID", `${name} must be a non-negative integer`);
  const n = Number(raw);
  if (!Number.isSafeInteger(n)) throw new DomainError("REQUEST.INVALID", `${name} is too large`);
  return n;
}

export const b64 = (h: Uint8Array) => Buffer.from(h).toString("base64");

/** Public, cacheable answers of the log: immutable ones (entries, full tiles) forever. */
export function publicBytes(body: Uint8Array, contentType: string, immutable: boolean): Response {
  return new Response(Buffer.from(body), {
    status: 200,
    headers: {
      "content-type": contentType,
      "cache-control": immutable ? "public, max-age=31536000, immutable" : "public, max-age=1",
      "access-control-allow-origin": "*",
    },
  });
}
