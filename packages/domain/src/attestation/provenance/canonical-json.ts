// Canonical JSON for the bytes Kiln signs and logs: object keys sorted by UTF-16 code unit (as
// RFC 8785 orders them), no whitespace, JSON.stringify's escaping for strings. The inputs are
// Kiln's own records (strings, integers, booleans, nulls), so RFC 8785's float rules never arise;
// a non-integer number is refused rather than serialised two ways.

export function canonicalJson(v: unknown): string {
  if (v === null) return "null";
  switch (typeof v) {
    case "string":
    case "boolean":
      return JSON.stringify(v);
    case "number":
      if (!Number.isSafeInteger(v)) throw new Error("canonical JSON takes safe integers only");
      return String(v);
    case "object": {
      if (Array.isArray(v)) return `[${v.map(canonicalJson).join(",")}]`;
      const o = v as Record<string, unknown>;
      const keys = Object.keys(o)
        .filter((k) => o[k] !== undefined)
        .sort();
      return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(o[k])}`).join(",")}}`;
    }
    default:
      throw new Error(`canonical JSON cannot hold a ${typeof v}`);
  }
}
